package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestHelloAndFetch(t *testing.T) {
	srv := httptest.NewServer(hello("hello-0"))
	defer srv.Close()
	var out bytes.Buffer
	if err := fetchTo(&out, srv.URL+"/any/path", time.Second); err != nil {
		t.Fatalf("fetch: %v", err)
	}
	if out.String() != "hello from hello-0\n" {
		t.Errorf("body %q, want the pod's name", out.String())
	}

	notFound := httptest.NewServer(http.NotFoundHandler())
	defer notFound.Close()
	err := fetchTo(&out, notFound.URL, time.Second)
	if err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("fetch of a 404: %v, want an error naming the status", err)
	}
}
