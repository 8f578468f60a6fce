package streams_test

// A query started by the real 2.x Python runtime (queen-mq 2.6.0 in build/venv), or by our JS
// SDK (clients/js), and resumed by this one: the same config_hash (no 409 without reset), and
// the state the first runner left open is continued here; and the other way round, a query
// started here and resumed by the Python runtime. QUEEN_PYTHON names the venv's interpreter
// (the runner sets it; default ../../build/venv/bin/python).

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	queen "github.com/queen-mq/queen/clients/go"
	"github.com/queen-mq/queen/clients/go/streams"
)

const pyRunner = `
import asyncio, sys
from queen import Queen
from queen.streams import Stream
url, src, sink, query, reset, want = sys.argv[1:7]
async def main():
    q = Queen(url)
    h = await (Stream.from_(q.queue(src))
               .window_tumbling(seconds=10, event_time=lambda m: m["data"]["ts"], idle_flush_ms=0)
               .aggregate({"count": lambda m: 1, "sum": lambda m: m["ts"]})
               .to(q.queue(sink))
               .run(query_id=query, url=url, batch_size=50, max_wait_millis=300, reset=(reset == "1")))
    for _ in range(100):
        await asyncio.sleep(0.1)
        if h.metrics()["messagesTotal"] >= int(want):
            break
    await h.stop()
    print("python messages", h.metrics()["messagesTotal"])
asyncio.run(main())
`

const jsRunner = `
const [pkg, url, src, sink, query] = process.argv.slice(2);
const { Queen, Stream } = await import(pkg);
const q = new Queen({ url });
const h = await Stream.from(q.queue(src))
  .windowTumbling({ seconds: 10, eventTime: (m) => m.data.ts, idleFlushMs: 0 })
  .aggregate({ count: () => 1, sum: (m) => m.ts })
  .to(q.queue(sink))
  .run({ queryId: query, url, batchSize: 50, maxWait: 300, reset: true });
for (let i = 0; i < 100 && h.metrics().messagesTotal < 3; i++) await new Promise((r) => setTimeout(r, 100));
await h.stop();
console.log('js messages', h.metrics().messagesTotal);
`

// the chain the Python and JS runners build, spelled in Go
func crossChain(src, sink string) *streams.Stream {
	return streams.From(src).WindowTumbling(10).EventTime(ts).IdleFlushMs(0).
		Aggregate(streams.Count("count"), streams.Sum("sum", streams.Field("ts"))).To(sink)
}

func python(t *testing.T) string {
	t.Helper()
	py := os.Getenv("QUEEN_PYTHON")
	if py == "" {
		py, _ = filepath.Abs(filepath.Join("..", "..", "..", "build", "venv", "bin", "python"))
	}
	if _, err := os.Stat(py); err != nil {
		t.Fatalf("the venv with queen-mq 2.6.0 (%s) is missing: run scripts/install-deps.sh (QUEEN_PYTHON names another)", py)
	}
	return py
}

func resumeHere(t *testing.T, c *queen.Client, src, sink, query, firstOut string) {
	t.Helper()
	// the same hash, so no reset is needed to resume it
	h, err := crossChain(src, sink).Run(context.Background(), c, streams.RunOptions{QueryID: query, BatchSize: 50, MaxWait: 200 * time.Millisecond})
	if err != nil {
		t.Fatalf("the Go chain resumes the query (same config_hash): %v\n%s", err, firstOut)
	}
	pushTs(t, c, src, "p", 13_000, 25_000)
	got := drainExact(t, c, sink, "r", 2, 20*time.Second, 800*time.Millisecond)
	st := stop(t, h)
	// [0,10) closed by the first runner; [10,20) opened there (12 s) and closed here with 13 s
	same(t, sortedBy(got, "sum"), "[map[count:2 sum:3000] map[count:2 sum:25000]]", []any{st, firstOut})
}

func TestAQueryStartedInPythonIsResumedInGo(t *testing.T) {
	c := client(t)
	py := python(t)
	src, sink, query := uniq("x-src"), uniq("x-sink"), uniq("x-query")
	pushTs(t, c, src, "p", 1_000, 2_000, 12_000)
	out, err := exec.Command(py, "-c", pyRunner, os.Getenv("QUEEN_URL"), src, sink, query, "1", "3").CombinedOutput()
	if err != nil {
		t.Fatalf("python runner: %v\n%s", err, out)
	}
	resumeHere(t, c, src, sink, query, string(out))
}

func TestAQueryStartedInJSIsResumedInGo(t *testing.T) {
	c := client(t)
	src, sink, query := uniq("xj-src"), uniq("xj-sink"), uniq("xj-query")
	pushTs(t, c, src, "p", 1_000, 2_000, 12_000)
	pkg, _ := filepath.Abs(filepath.Join("..", "..", "js", "index.js"))
	script := filepath.Join(t.TempDir(), "runner.mjs")
	if err := os.WriteFile(script, []byte(jsRunner), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("node", script, "file://"+pkg, os.Getenv("QUEEN_URL"), src, sink, query).CombinedOutput()
	if err != nil {
		t.Fatalf("js runner: %v\n%s", err, out)
	}
	resumeHere(t, c, src, sink, query, string(out))
}

func TestAQueryStartedInGoIsResumedInPython(t *testing.T) {
	c := client(t)
	py := python(t)
	src, sink, query := uniq("xg-src"), uniq("xg-sink"), uniq("xg-query")
	pushTs(t, c, src, "p", 1_000, 2_000, 12_000)
	h := run(t, c, crossChain(src, sink), streams.RunOptions{QueryID: query, Reset: true, BatchSize: 50, MaxWait: 200 * time.Millisecond})
	first := drain(t, c, sink, "r", 1, 20*time.Second)
	t0 := time.Now()
	for h.Stats().Messages < 3 && time.Since(t0) < 10*time.Second {
		time.Sleep(20 * time.Millisecond)
	}
	stop(t, h)
	// the Python runtime resumes it without a reset and closes the window Go left open
	pushTs(t, c, src, "p", 13_000, 25_000)
	out, err := exec.Command(py, "-c", pyRunner, os.Getenv("QUEEN_URL"), src, sink, query, "0", "2").CombinedOutput()
	if err != nil {
		t.Fatalf("python runner: %v\n%s", err, out)
	}
	got := append(first, drainExact(t, c, sink, "r", 1, 20*time.Second, 800*time.Millisecond)...)
	same(t, sortedBy(got, "sum"), "[map[count:2 sum:3000] map[count:2 sum:25000]]", string(out))
}
