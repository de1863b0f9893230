//go:build amd64 && !noasm

#include "textflag.h"

// func spinPause()
// Eight PAUSEs: about 0.1-0.3 µs on current x86 cores, so a polling loop
// reads shared cache lines a few million times a second at most.
TEXT ·spinPause(SB), NOSPLIT|NOFRAME, $0-0
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	PAUSE
	RET
