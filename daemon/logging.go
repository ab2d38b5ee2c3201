package daemon

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"haven/paths"
)

// newLogger logs human-readable lines to the node log (and stderr).
func newLogger(file string, stderr bool) (*zap.Logger, error) {
	f, err := os.OpenFile(file, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	enc.EncodeLevel = zapcore.CapitalLevelEncoder
	ws := zapcore.AddSync(f)
	if stderr {
		ws = zapcore.NewMultiWriteSyncer(ws, zapcore.Lock(os.Stderr))
	}
	core := zapcore.NewCore(zapcore.NewConsoleEncoder(enc), ws, zap.InfoLevel)
	return zap.New(core).Named("daemon"), nil
}

// svcLogs appends the output of resource commands and the daemon's
// messages about a service to R/log/services/NAME.log.
type svcLogs struct {
	p  paths.Paths
	mu sync.Mutex
}

func newSvcLogs(p paths.Paths) *svcLogs { return &svcLogs{p: p} }

func (s *svcLogs) write(svc, rid, line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, err := os.OpenFile(s.p.ServiceLog(svc), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if rid == "" {
		rid = "-"
	}
	fmt.Fprintf(f, "%s %s %s\n", time.Now().Format("2006-01-02T15:04:05.000Z07:00"), rid, line)
}

// tail returns the last n lines of a service's log (every line when n < 0).
func (s *svcLogs) tail(svc string, n int) ([]byte, int64, error) {
	f, err := os.Open(s.p.ServiceLog(svc))
	if os.IsNotExist(err) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, 0, err
	}
	size := int64(len(b))
	if n >= 0 {
		lines := bytes.SplitAfter(b, []byte("\n"))
		if len(lines) > 0 && len(lines[len(lines)-1]) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		b = bytes.Join(lines, nil)
	}
	return b, size, nil
}

// follow writes what is appended to the log from offset on until done.
func (s *svcLogs) follow(svc string, off int64, w io.Writer, flush func(), done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-time.After(200 * time.Millisecond):
		}
		f, err := os.Open(s.p.ServiceLog(svc))
		if err != nil {
			continue
		}
		st, err := f.Stat()
		if err == nil && st.Size() < off {
			off = 0 // truncated or rotated
		}
		if err == nil && st.Size() > off {
			f.Seek(off, io.SeekStart)
			r := bufio.NewReader(io.LimitReader(f, st.Size()-off))
			n, _ := io.Copy(w, r)
			off += n
			flush()
		}
		f.Close()
	}
}
