package main

import "github.com/speech-pipeline/underrun/pipeline/testkit"

// raceEnabled says the race detector is on: it multiplies memory and time,
// so tests that measure them skip.
const raceEnabled = testkit.Race
