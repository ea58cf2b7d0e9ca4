package gctune

// PregrowBytes is how much stack PregrowStack asks for: about what a chat
// turn's activity, handler or search goroutine reaches (JSON decoding,
// pgx, the Temporal SDK's payload visitor), so it grows once, near its
// root, instead of doubling from the runtime's 8 KB several times deep in
// a call chain, where each copy walks every frame (newstack was 10% of
// lore's CPU at 200 concurrent chat turns).
const PregrowBytes = 16 << 10

// PregrowStack grows the calling goroutine's stack to hold at least
// PregrowBytes more. Call it first thing in a goroutine that goes deep;
// the runtime shrinks a stack that stays mostly unused at a collection.
func PregrowStack() { pregrow(0) }

// pregrow's frame holds the array; the variable indexes keep the compiler
// from dropping it.
//
//go:noinline
func pregrow(i int) byte {
	var b [PregrowBytes]byte
	b[i] = byte(i)
	return b[(i+1)%len(b)]
}
