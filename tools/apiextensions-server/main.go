// Command apiextensions-server serves Kubernetes' API for custom resources on its own:
// CustomResourceDefinitions and the resources they define, stored in etcd, with the CRD
// validation (structural schemas, CEL rules), defaulting, server-side apply and subresources of
// the Kubernetes release it is built from. Tests use it to check CRDs against a current API
// server without a whole cluster; scripts/apiextensions-server builds it.
//
// It differs from the library's own command where a server without a core API needs it to:
// discovery and OpenAPI v2 are served (kubectl needs them); there are no admission plugins and
// no priority and fairness (their configuration lives in APIs this server does not have);
// nothing is delegated to another API server: client certificates signed by --client-ca-file
// authenticate, and system:masters may do everything, everyone else nothing.
//
// --kubeconfig must still name a kubeconfig (any, e.g. one for this server): the library's
// configuration makes informers on it for the core API, which this server then drops.
package main

import (
	"context"
	"os"

	"github.com/spf13/cobra"

	"k8s.io/apiextensions-apiserver/pkg/apiserver"
	"k8s.io/apiextensions-apiserver/pkg/cmd/server/options"
	generatedopenapi "k8s.io/apiextensions-apiserver/pkg/generated/openapi"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/util/openapi"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version/verflag"
)

func main() {
	opts := options.NewCustomResourceDefinitionsServerOptions(os.Stdout, os.Stderr)
	opts.RecommendedOptions.Admission = nil
	opts.RecommendedOptions.Features.EnablePriorityAndFairness = false
	authn := opts.RecommendedOptions.Authentication
	authn.RemoteKubeConfigFileOptional = true
	authn.SkipInClusterLookup = true
	opts.RecommendedOptions.Authorization.RemoteKubeConfigFileOptional = true

	cmd := &cobra.Command{
		Use:          "apiextensions-server",
		Short:        "Serve CustomResourceDefinitions and custom resources from etcd",
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			verflag.PrintAndExitIfRequested()
			return opts.ServerRunOptions.ComponentGlobalsRegistry.Set()
		},
		RunE: func(c *cobra.Command, _ []string) error {
			if err := opts.Complete(); err != nil {
				return err
			}
			if err := opts.Validate(); err != nil {
				return err
			}
			return serve(c.Context(), opts)
		},
	}
	cmd.SetContext(genericapiserver.SetupSignalContext())
	opts.AddFlags(cmd.Flags())
	verflag.AddFlags(cmd.Flags())
	os.Exit(cli.Run(cmd))
}

func serve(ctx context.Context, opts *options.CustomResourceDefinitionsServerOptions) error {
	config, err := opts.Config()
	if err != nil {
		return err
	}
	// The core API's informers would never sync here, and readiness waits for them.
	config.GenericConfig.SharedInformerFactory = nil
	// Conversion webhooks are then reached by their Service's DNS name.
	config.ExtraConfig.ServiceResolver = webhook.NewDefaultServiceResolver()
	// The CRDs' OpenAPI controllers (v2 and v3) run only when OpenAPI v2 is served.
	config.GenericConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(
		openapi.GetOpenAPIDefinitionsWithoutDisabledFeatures(generatedopenapi.GetOpenAPIDefinitions),
		openapinamer.NewDefinitionNamer(apiserver.Scheme, scheme.Scheme),
	)
	completed := config.Complete()
	// Complete leaves discovery to an aggregating API server; this one has none in front.
	completed.GenericConfig.EnableDiscovery = true
	server, err := completed.New(genericapiserver.NewEmptyDelegate())
	if err != nil {
		return err
	}
	return server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
