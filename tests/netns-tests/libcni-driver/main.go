// libcni-driver is a minimal CNI runtime client used by the netns integration
// tests. It drives plugins through libcni (AddNetworkList, CheckNetworkList,
// DelNetworkList, ValidateNetworkList), which is the same library containerd,
// CRI-O and Multus use, so a plugin that works under this driver sees exactly
// the environment, stdin, prevResult and result cache a real runtime gives it.
//
// Build (Debian 12, offline, GOPATH mode against golang-github-appc-cni-dev):
//
//	GOPATH=/usr/share/gocode GO111MODULE=off go build -o libcni-driver ./tests/netns-tests/libcni-driver
//
// Usage:
//
//	libcni-driver {add|check|del} --conflist FILE --netns PATH --container-id ID --ifname NAME
//	    [--cni-args 'K=V;K=V'] [--cap-args JSON] [--plugin-path DIR:DIR] [--cache-dir DIR]
//	    [--timeout DURATION]
//	libcni-driver validate --conflist FILE [--plugin-path DIR:DIR]
//
// On success ADD prints the result JSON on stdout; CHECK and DEL print nothing;
// VALIDATE prints the enabled capabilities as a JSON array. On any failure
// (including a bad command line) the error goes to stderr and the exit status
// is 1.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/types"
)

const usageText = `usage:
  libcni-driver {add|check|del} --conflist FILE --netns PATH --container-id ID --ifname NAME
      [--cni-args 'K=V;K=V'] [--cap-args JSON] [--plugin-path DIR:DIR] [--cache-dir DIR]
      [--timeout DURATION]
  libcni-driver validate --conflist FILE [--plugin-path DIR:DIR]
`

// options holds the parsed command line of one invocation.
type options struct {
	verb        string
	conflist    string
	netns       string
	containerID string
	ifname      string
	cniArgs     string
	capArgs     string
	pluginPath  string
	cacheDir    string
	timeout     time.Duration
}

// usageError marks a problem with the command line (the usage text is printed).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func parseOptions(argv []string) (*options, error) {
	if len(argv) < 1 {
		return nil, usageError{"missing verb"}
	}
	o := &options{verb: argv[0]}
	switch o.verb {
	case "add", "check", "del", "validate":
	case "-h", "--help", "help":
		return nil, usageError{""}
	default:
		return nil, usageError{fmt.Sprintf("unknown verb %q", o.verb)}
	}

	fs := flag.NewFlagSet("libcni-driver "+o.verb, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.conflist, "conflist", "", "network configuration list file")
	fs.StringVar(&o.netns, "netns", "", "path of the container network namespace")
	fs.StringVar(&o.containerID, "container-id", "", "container (sandbox) ID")
	fs.StringVar(&o.ifname, "ifname", "", "interface name inside the container")
	fs.StringVar(&o.cniArgs, "cni-args", "", "CNI_ARGS as 'K=V;K=V'")
	fs.StringVar(&o.capArgs, "cap-args", "", "capability args (runtimeConfig) as a JSON object")
	fs.StringVar(&o.pluginPath, "plugin-path", os.Getenv("CNI_PATH"), "plugin search path, ':'-separated (default $CNI_PATH)")
	fs.StringVar(&o.cacheDir, "cache-dir", filepath.Join(os.TempDir(), "libcni-driver-cache"), "libcni result cache directory")
	fs.DurationVar(&o.timeout, "timeout", 2*time.Minute, "deadline for the whole operation")
	if err := fs.Parse(argv[1:]); err != nil {
		return nil, usageError{err.Error()}
	}
	if fs.NArg() != 0 {
		return nil, usageError{fmt.Sprintf("unexpected arguments: %v", fs.Args())}
	}

	missing := []string{}
	if o.conflist == "" {
		missing = append(missing, "--conflist")
	}
	if o.pluginPath == "" {
		missing = append(missing, "--plugin-path (or $CNI_PATH)")
	}
	if o.verb != "validate" {
		// libcni itself validates the container ID and ifname on ADD; we only
		// insist that they were given, so that bad values reach libcni.
		if !isSet(fs, "container-id") {
			missing = append(missing, "--container-id")
		}
		if !isSet(fs, "ifname") {
			missing = append(missing, "--ifname")
		}
		// CNI_NETNS is optional on DEL (the namespace may already be gone).
		if o.verb != "del" && o.netns == "" {
			missing = append(missing, "--netns")
		}
	}
	if len(missing) > 0 {
		return nil, usageError{"missing required options: " + strings.Join(missing, ", ")}
	}
	return o, nil
}

func isSet(fs *flag.FlagSet, name string) bool {
	found := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			found = true
		}
	})
	return found
}

// parseCNIArgs splits "K=V;K=V" into pairs. Each pair is split at its first
// '=' so values may themselves contain '=' (Multus passes such values through).
func parseCNIArgs(s string) ([][2]string, error) {
	var pairs [][2]string
	if s == "" {
		return pairs, nil
	}
	for _, item := range strings.Split(s, ";") {
		if item == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("invalid --cni-args pair %q: want KEY=VALUE", item)
		}
		pairs = append(pairs, [2]string{k, v})
	}
	return pairs, nil
}

func parseCapArgs(s string) (map[string]interface{}, error) {
	if s == "" {
		return nil, nil
	}
	caps := map[string]interface{}{}
	if err := json.Unmarshal([]byte(s), &caps); err != nil {
		return nil, fmt.Errorf("invalid --cap-args: want a JSON object: %w", err)
	}
	return caps, nil
}

func splitPath(p string) []string {
	var dirs []string
	for _, d := range filepath.SplitList(p) {
		if d != "" {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

func run(o *options, stdout io.Writer) error {
	list, err := libcni.ConfListFromFile(o.conflist)
	if err != nil {
		return fmt.Errorf("loading %s: %w", o.conflist, err)
	}
	cni := libcni.NewCNIConfigWithCacheDir(splitPath(o.pluginPath), o.cacheDir, nil)

	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()

	if o.verb == "validate" {
		caps, err := cni.ValidateNetworkList(ctx, list)
		if err != nil {
			return err
		}
		if caps == nil {
			caps = []string{}
		}
		return json.NewEncoder(stdout).Encode(caps)
	}

	args, err := parseCNIArgs(o.cniArgs)
	if err != nil {
		return err
	}
	capArgs, err := parseCapArgs(o.capArgs)
	if err != nil {
		return err
	}
	rt := &libcni.RuntimeConf{
		ContainerID:    o.containerID,
		NetNS:          o.netns,
		IfName:         o.ifname,
		Args:           args,
		CapabilityArgs: capArgs,
	}

	switch o.verb {
	case "add":
		result, err := cni.AddNetworkList(ctx, list, rt)
		if err != nil {
			return err
		}
		if result == nil {
			// A plugin may legitimately print "null"; report it as JSON null.
			_, err = fmt.Fprintln(stdout, "null")
			return err
		}
		if err := result.PrintTo(stdout); err != nil {
			return err
		}
		_, err = fmt.Fprintln(stdout)
		return err
	case "check":
		return cni.CheckNetworkList(ctx, list, rt)
	case "del":
		return cni.DelNetworkList(ctx, list, rt)
	}
	return fmt.Errorf("unknown verb %q", o.verb)
}

func main() {
	o, err := parseOptions(os.Args[1:])
	if err != nil {
		if err.Error() == "" { // --help
			fmt.Fprint(os.Stdout, usageText)
			os.Exit(0)
		}
		fmt.Fprintf(os.Stderr, "libcni-driver: %v\n%s", err, usageText)
		os.Exit(1)
	}
	if err := run(o, os.Stdout); err != nil {
		msg := fmt.Sprintf("libcni-driver: %s failed: %v", o.verb, err)
		// Surface the CNI error code when libcni or a plugin returned a typed
		// error, so tests can assert on it.
		var cniErr *types.Error
		if errors.As(err, &cniErr) {
			msg += fmt.Sprintf(" [CNI error code %d]", cniErr.Code)
		}
		fmt.Fprintln(os.Stderr, msg)
		os.Exit(1)
	}
}
