// Command apiserver is a runnable example of package apf: an HTTP server
// that answers Kubernetes-style API requests behind API Priority and
// Fairness, and a load generator that drives it.
//
// Serve:
//
//	go run ./examples/apiserver --listen 127.0.0.1:8080 --server-concurrency N [--config FILE] [--work 20ms]
//
// It authenticates by the Kubernetes request-header convention
// (X-Remote-User, one X-Remote-Group header per group; no user means
// system:anonymous), answers every /api/... and /apis/... request with 200
// after holding its seat for --work, serves the debug endpoints under
// /debug/api_priority_and_fairness/, and logs one line when ready. With
// --config it reads FlowSchemas and PriorityLevelConfigurations from
// Kubernetes YAML or JSON; without, upstream's bootstrap defaults. The
// borrowing adjustment runs every 10 seconds.
//
// Drive it (a noisy user and several quiet ones, all in group
// system:authenticated, so global-default with the defaults):
//
//	go run ./examples/apiserver --load http://127.0.0.1:8080 [--duration 10s] [--noisy 64] [--quiet 4] [--quiet-concurrency 4] [--quiet-rate 0]
//
// With --quiet-rate R each quiet user is paced at R requests a second
// (at most --quiet-concurrency in flight) instead of keeping its requests
// in flight back to back. It prints per user the requests offered (paced
// users), sent, served and answered 429, the served rate and the wait
// percentiles the server reports.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/fairslice/fairslice/apf"
	"github.com/fairslice/fairslice/apf/loadtest"
	"github.com/fairslice/fairslice/flowschema"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to serve on")
	serverCL := flag.Int("server-concurrency", 600, "server concurrency limit in seats")
	config := flag.String("config", "", "FlowSchemas and PriorityLevelConfigurations (YAML or JSON); default the bootstrap configuration")
	work := flag.Duration("work", 20*time.Millisecond, "how long each API request holds its seat")
	load := flag.String("load", "", "run the load generator against this base URL instead of serving")
	duration := flag.Duration("duration", 10*time.Second, "load: how long to drive the server")
	noisy := flag.Int("noisy", 64, "load: requests the noisy user keeps in flight")
	quiet := flag.Int("quiet", 4, "load: number of quiet users")
	quietConc := flag.Int("quiet-concurrency", 4, "load: requests each quiet user keeps in flight (with --quiet-rate, at most)")
	quietRate := flag.Float64("quiet-rate", 0, "load: requests per second each quiet user sends; 0: back to back")
	path := flag.String("path", "/api/v1/namespaces/default/pods", "load: path to request")
	flag.Parse()

	if *load != "" {
		if err := drive(*load, *path, *duration, *work, *noisy, *quiet, *quietConc, *quietRate); err != nil {
			log.Fatal(err)
		}
		return
	}
	if err := serve(*listen, *serverCL, *config, *work); err != nil {
		log.Fatal(err)
	}
}

func serve(listen string, serverCL int, configFile string, work time.Duration) error {
	var objects *flowschema.Config
	source := "bootstrap defaults"
	if configFile != "" {
		data, err := os.ReadFile(configFile)
		if err != nil {
			return err
		}
		if objects, err = flowschema.Decode(data); err != nil {
			return fmt.Errorf("%s: %w", configFile, err)
		}
		source = configFile
	}
	c, err := apf.New(objects, apf.Options{ServerConcurrencyLimit: serverCL, AdjustPeriod: apf.BorrowingAdjustmentPeriod})
	if err != nil {
		return err
	}
	defer c.Close()

	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t, ok := apf.TicketFromContext(r.Context()); ok {
			w.Header().Set(loadtest.HeaderWait, strconv.FormatFloat(t.Wait().Seconds(), 'f', -1, 64))
		}
		select {
		case <-time.After(work):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintln(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	})
	limited, err := c.Handler(api, apf.HandlerOptions{User: apf.RequestHeaderUser})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/api/", limited)
	mux.Handle("/apis/", limited)
	c.InstallDebug(mux)

	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Printf("apiserver: serving on http://%s (server concurrency %d, config %s, work %v)", ln.Addr(), serverCL, source, work)
	if err := srv.Serve(ln); err != http.ErrServerClosed {
		return err
	}
	return nil
}

func drive(url, path string, duration, work time.Duration, noisy, quiet, quietConc int, quietRate float64) error {
	users := []loadtest.User{{Name: "noisy", Groups: []string{"system:authenticated"}, Concurrency: noisy}}
	for i := 1; i <= quiet; i++ {
		users = append(users, loadtest.User{Name: fmt.Sprintf("quiet-%d", i), Groups: []string{"system:authenticated"}, Concurrency: quietConc, Rate: quietRate})
	}
	rep, err := loadtest.Run(context.Background(), loadtest.Config{URL: url, Path: path, Users: users, Duration: duration, Work: work})
	if err != nil {
		return err
	}
	fmt.Printf("%d users for %v against %s%s:\n", len(users), duration, url, path)
	return rep.Write(os.Stdout)
}
