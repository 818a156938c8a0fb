// Package apptest holds what the tests of the countersign command and of
// its web app share.
package apptest

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer that a server's goroutines may write, as its log
// or its output, while the test reads it.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
