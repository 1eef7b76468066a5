// Command demo-server is the small HTTP server of examples/: it answers every
// request with the name of the pod it runs in, so a user (and test/e2e) can see
// which pod an address reaches.
package main

import (
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "address to serve HTTP on")
	flag.Parse()

	pod := os.Getenv("POD_NAME")
	if pod == "" {
		// Without the downward API the hostname is the pod name for plain pods.
		pod, _ = os.Hostname()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", pod)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("pod %s serving on %s", pod, *addr)
	log.Fatal(srv.ListenAndServe())
}
