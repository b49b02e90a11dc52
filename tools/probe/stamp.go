package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"time"
)

// runStamp copies in to out unchanged and writes every line to the file at
// path prefixed with the host's clock (unix ns, a tab) at the moment the
// line's first byte arrived. A VM's serial console read this way gives its
// boot phases on the host's clock (the guest's own clock cannot be compared).
// It ends at EOF on in; a closed out does not stop the stamping.
func runStamp(path string, in io.Reader, out io.Writer, now func() time.Time) int {
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return exitUsage
	}
	defer f.Close()
	buf := make([]byte, 64*1024)
	atLineStart := true
	for {
		n, err := in.Read(buf)
		if n > 0 {
			at := now().UnixNano()
			out.Write(buf[:n]) // best effort: the stamps are what must not be lost
			stamped := stampLines(buf[:n], at, &atLineStart)
			if _, werr := f.Write(stamped); werr != nil {
				fmt.Fprintln(os.Stderr, "probe:", werr)
				return exitLauncher
			}
		}
		if err != nil {
			return 0
		}
	}
}

// stampLines prefixes every line that starts in chunk with "at\t".
func stampLines(chunk []byte, at int64, atLineStart *bool) []byte {
	var b bytes.Buffer
	prefix := fmt.Sprintf("%d\t", at)
	for len(chunk) > 0 {
		if *atLineStart {
			b.WriteString(prefix)
			*atLineStart = false
		}
		i := bytes.IndexByte(chunk, '\n')
		if i < 0 {
			b.Write(chunk)
			break
		}
		b.Write(chunk[:i+1])
		chunk = chunk[i+1:]
		*atLineStart = true
	}
	return b.Bytes()
}
