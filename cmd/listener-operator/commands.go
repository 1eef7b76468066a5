package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
)

// command is one subcommand: it registers its flags on fs and returns the
// function that runs once the flags are parsed.
type command struct {
	summary string
	setup   func(fs *flag.FlagSet, stdout io.Writer) func(ctx context.Context) error
}

// commands lists every subcommand; files that add one register it here.
func commands() map[string]command {
	return map[string]command{
		"version":    versionCommand(),
		"controller": controllerCommand(),
		"csi":        csiCommand(),
		// helm test (deploy/helm/listener-operator/templates/tests).
		"check-listener": checkListenerCommand(),
		// The OLM bundle's olm-deployer (hack/bundle).
		"olm-deploy": olmDeployCommand(),
	}
}

// options are a long-running subcommand's flags: registered, completed
// (defaults that depend on each other, cross-checks), then run.
type options interface {
	addFlags(fs *flag.FlagSet)
	complete() error
	run(ctx context.Context) error
}

// optionsCommand makes a subcommand out of its options.
func optionsCommand(summary string, o options) command {
	return command{
		summary: summary,
		setup: func(fs *flag.FlagSet, _ io.Writer) func(context.Context) error {
			o.addFlags(fs)
			return func(ctx context.Context) error {
				if err := o.complete(); err != nil {
					return err
				}
				return o.run(ctx)
			}
		},
	}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: listener-operator <command> [flags]")
	fmt.Fprintln(w, "\ncommands:")
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'listener-operator <command> -h' for a command's flags.")
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cmd, ok := commands()[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "listener-operator: unknown command %q\n\n", args[0])
		usage(stderr)
		return 2
	}
	fs := flag.NewFlagSet("listener-operator "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	runCmd := cmd.setup(fs, stdout)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := runCmd(ctx); err != nil {
		fmt.Fprintf(stderr, "listener-operator %s: %v\n", args[0], err)
		return 1
	}
	return 0
}
