// Command demo-server is the small HTTP server of examples/: it answers every
// request with the name of the pod it runs in, so a user (and test/e2e) can see
// which pod an address reaches. With -get URL it is the client instead: it
// prints the body of URL, for checks from inside another pod (busybox's static
// wget crashes on this platform).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

func main() {
	addr := flag.String("listen", ":8080", "address to serve HTTP on")
	get := flag.String("get", "", "fetch this URL, print the body and exit instead of serving")
	timeout := flag.Duration("timeout", 3*time.Second, "timeout of -get")
	tlsDir := flag.String("tls-dir", "", "serve HTTPS with tls.crt and tls.key of this directory, read at every handshake (a mounted Secret that is reissued)")
	flag.Parse()

	if *get != "" {
		if err := fetch(*get, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}

	pod := os.Getenv("POD_NAME")
	if pod == "" {
		// Without the downward API the hostname is the pod name for plain pods.
		pod, _ = os.Hostname()
	}
	srv := &http.Server{Addr: *addr, Handler: hello(pod), ReadHeaderTimeout: 5 * time.Second}
	log.Printf("pod %s serving on %s", pod, *addr)
	if *tlsDir != "" {
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: certificateIn(*tlsDir)}
		log.Fatal(srv.ListenAndServeTLS("", ""))
	}
	log.Fatal(srv.ListenAndServe())
}

// certificateIn reads the key pair of dir at every handshake: a Secret
// volume is updated in place when its certificate is reissued (or appears
// after the pod started, for an optional Secret).
func certificateIn(dir string) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		c, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
		if err != nil {
			return nil, fmt.Errorf("load the certificate of %s: %w", dir, err)
		}
		return &c, nil
	}
}

// hello answers every request with the pod's name.
func hello(pod string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "hello from %s\n", pod)
	})
}

// fetch writes the body of url to stdout; anything but 200 OK is an error.
func fetch(url string, timeout time.Duration) error {
	return fetchTo(os.Stdout, url, timeout)
}

func fetchTo(w io.Writer, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}
