//go:build speaker && linux

package main

/*
#cgo pkg-config: alsa
#include <alsa/asoundlib.h>
#include <stdlib.h>
#include <string.h>

static void quiet(const char *file, int line, const char *fn, int err, const char *fmt, ...) {}

// probe_playback tries the playback devices the audio library tries
// (the default, then every output ALSA lists), with ALSA's own error
// lines kept off stderr; it returns 0 when one opens, else the first
// error.
static int probe_playback(void) {
	snd_lib_error_set_handler(quiet);
	int first = 0;
	snd_pcm_t *h;
	int err = snd_pcm_open(&h, "default", SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK);
	if (err == 0 || err == -EBUSY) {
		if (err == 0) snd_pcm_close(h);
		snd_lib_error_set_handler(NULL);
		return 0;
	}
	first = err;
	void **hints;
	if (snd_device_name_hint(-1, "pcm", &hints) == 0) {
		for (void **it = hints; *it != NULL; it++) {
			char *name = snd_device_name_get_hint(*it, "NAME");
			char *io = snd_device_name_get_hint(*it, "IOID");
			int output = io == NULL || strcmp(io, "Output") == 0;
			if (name != NULL && output && strcmp(name, "null") != 0) {
				err = snd_pcm_open(&h, name, SND_PCM_STREAM_PLAYBACK, SND_PCM_NONBLOCK);
				if (err == 0) snd_pcm_close(h);
			} else {
				err = first;
			}
			free(name);
			free(io);
			if (err == 0 || err == -EBUSY) {
				snd_device_name_free_hint(hints);
				snd_lib_error_set_handler(NULL);
				return 0;
			}
		}
		snd_device_name_free_hint(hints);
	}
	snd_lib_error_set_handler(NULL);
	return first;
}
*/
import "C"

import "fmt"

// probeSoundCard reports, before any audio library starts (and prints
// ALSA's errors, and carries on without a card), whether a playback
// device opens.
func probeSoundCard() error {
	if err := C.probe_playback(); err < 0 {
		return fmt.Errorf("no sound card to play through: ALSA cannot open a playback device: %s", C.GoString(C.snd_strerror(err)))
	}
	return nil
}
