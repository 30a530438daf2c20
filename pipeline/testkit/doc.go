// Package testkit holds what the tests of several packages share: a
// buffer a test reads while a server or command writes to it, and the
// kernel's receive stamps kept on for a test. Only tests import it.
package testkit
