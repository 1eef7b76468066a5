package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/listener-operator/listener-operator/internal/version"
)

func versionCommand() command {
	return command{
		summary: "print the version",
		setup: func(_ *flag.FlagSet, stdout io.Writer) func(context.Context) error {
			return func(context.Context) error {
				_, err := fmt.Fprintln(stdout, version.String())
				return err
			}
		},
	}
}
