// Package prometheus ships the Prometheus rules for a fleet of underrun
// monitors: rules.yml holds the recording rules (fleet-wide interruptions
// per minute of speech, speech goodput, ITL and time-to-first-audio
// percentiles from the histograms, live sessions per monitor) and the
// alerting rules (an interruption rate above its threshold, a monitor
// dropping subscribers or refusing messages, a monitor near its
// --max-sessions, a monitor Prometheus cannot scrape); rules_test.yml holds
// their promtool unit tests. The names follow Prometheus' level:metric:
// operations convention. `underrun monitor rules` prints the rules.
package prometheus

import _ "embed" // the rules file

// Rules is rules.yml, for a rule_files entry of the Prometheus that
// scrapes the monitors in a job named "underrun".
//
//go:embed rules.yml
var Rules []byte
