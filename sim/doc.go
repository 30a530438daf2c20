// Package sim simulates token streams in virtual time: text split into
// tokens, token generators (constant pace, distributions, a roofline model
// of decoding on a GPU, prefill interference), and the sweeps and
// inversions built on the playout engine. It never touches the wall clock:
// the same seed gives the same turns.
package sim
