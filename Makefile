# listener-operator. Run `make help` for the targets.
SHELL := /usr/bin/env bash -o pipefail
.DEFAULT_GOAL := help

DEFAULT_K8S_VERSION := v1.36.3
K8S_VERSION ?= $(DEFAULT_K8S_VERSION)
# 1.33.13 and v1.33.13 both name a version.
override K8S_VERSION := v$(patsubst v%,%,$(K8S_VERSION))
BIN         := $(CURDIR)/bin
K8S_BIN     := $(BIN)/k8s/$(K8S_VERSION)
TOOLS_BIN   := $(BIN)/tools
CONTROLLER_GEN := $(TOOLS_BIN)/controller-gen
# Variables a rule's targets or prerequisites name are defined up here: make
# expands those when it reads the rule, so one defined below it is empty
# there (TestMakefileDefinesBeforeRules).
# kustomize and helm render config/ and deploy/helm (the manifest tests use them).
DEPLOY_TOOLS := $(TOOLS_BIN)/kustomize $(TOOLS_BIN)/helm
# kwok, for the fake nodes of `make scale` and the pods of test/robustness
# (pinned in hack/kwok/go.mod).
KWOK := $(TOOLS_BIN)/kwok
VERSION     ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
GO_LDFLAGS  := -X github.com/listener-operator/listener-operator/internal/version.Version=$(VERSION)
# grpcnotrace: gRPC leaves out golang.org/x/net/trace, whose html/template
# makes the linker keep every exported method of every type. Without it the
# binary is 14 MB larger and every process of the operator holds 7 MB more of
# it resident (docs/benchmarks.md). The Dockerfile builds with the same tags
# (TestBuildsLinkNoTemplateEngine).
GO_TAGS     := grpcnotrace
# Tests run the control plane that hack/build-k8s.sh builds.
export KUBEBUILDER_ASSETS := $(K8S_BIN)
# One setting for every build: flipping it invalidates the whole build cache.
export CGO_ENABLED := 0

##@ General

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "usage: make <target>\n"} /^[a-zA-Z0-9_-]+:.*?##/ { printf "  \033[36m%-16s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: build
build: ## Build bin/listener-operator.
	go build -trimpath -tags $(GO_TAGS) -ldflags "$(GO_LDFLAGS)" -o $(BIN)/listener-operator ./cmd/listener-operator

.PHONY: generate
generate: $(CONTROLLER_GEN) ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object paths=./api/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs, RBAC and webhook configurations from markers into config/.
	$(CONTROLLER_GEN) crd:crdVersions=v1 paths=./api/... output:crd:artifacts:config=config/crd/bases
	@# The manager (reconcilers, webhooks, certificates) and the CSI driver run
	@# as different service accounts, each with only the verbs its code uses.
	@pkgs=$$(for d in reconcile webhooks certs; do grep -rlqs '+kubebuilder:rbac' --include='*.go' $$d && printf './%s/...;' $$d; done); \
	  if [ -n "$$pkgs" ]; then $(CONTROLLER_GEN) rbac:roleName=listener-operator paths="$${pkgs%;}" output:rbac:artifacts:config=config/rbac; fi
	@# The CSI controller (package csi) and the node plugin (csi/noderbac)
	@# get a ClusterRole each.
	@if grep -lqs '+kubebuilder:rbac' csi/*.go; then \
	  $(CONTROLLER_GEN) rbac:roleName=listener-operator-csi paths=./csi output:rbac:artifacts:config=config/csi/rbac; fi
	@if grep -rlqs '+kubebuilder:rbac' --include='*.go' csi/noderbac; then \
	  $(CONTROLLER_GEN) rbac:roleName=listener-operator-csi-node paths=./csi/noderbac output:rbac:stdout > config/csi/rbac/node_role.yaml; fi
	@if grep -rlqs '+kubebuilder:webhook' --include='*.go' webhooks; then \
	  $(CONTROLLER_GEN) webhook paths=./webhooks/... output:webhook:artifacts:config=config/webhook; fi
	@$(MAKE) --no-print-directory helm-sync

.PHONY: fmt
fmt: ## gofmt the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify
verify: generate manifests bundle ## Check that generated files are committed, gofmt and go vet are clean.
	@git diff --exit-code -- api config deploy bundle || { echo "generated files are out of date: run 'make generate manifests bundle' and commit"; exit 1; }
	@untracked=$$(git ls-files --others --exclude-standard -- api config deploy bundle); \
	  if [ -n "$$untracked" ]; then echo "generated files are not committed: $$untracked"; exit 1; fi
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet ./...
	cd hack/bundle && go vet ./...
	@# The end-to-end tests build only with their tag.
	go vet -tags e2e ./test/...
	go vet -tags gateway ./hack/gateway/
	@# hack/certmanager: vet, and the controllers its binary registers (only the tested issuers).
	cd hack/certmanager && go vet ./... && go test -count=1 ./...
	@# The cert-manager the e2e cluster runs is the version of the API types the operator is built with.
	@ours=$$(go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager); built=$$(cd hack/certmanager && go list -m -f '{{.Version}}' github.com/cert-manager/cert-manager); \
	  [ "$$ours" = "$$built" ] || { echo "hack/certmanager/go.mod builds cert-manager $$built, go.mod's API types are $$ours: make them equal"; exit 1; }
	@echo "verify: ok"

##@ Test

.PHONY: test
# $(KWOK): test/robustness runs kwok (bin/tools/kwok) for its histories' pods.
test: k8s-binaries deploy-tools monitoring-tools $(KWOK) ## Run all tests against a real kube-apiserver built from source.
	@mkdir -p $(BIN)
	@# hack/bundle is its own module (operator-framework/api): its tests validate bundle/.
	{ go test -count=1 -v ./...; rc=$$?; (cd hack/bundle && go test -count=1 -v ./...) || rc=1; exit $$rc; } 2>&1 | tee $(BIN)/test.log | hack/test-summary.sh

# test-compat: the envtest suites against an older supported control plane
# (docs/install.md, "Supported Kubernetes versions"). K8S_VERSION must be
# pinned in hack/k8s/v1.<minor>/go.mod; its binaries go to bin/k8s/<version>.
# Not in CI: a cold build of that control plane takes about 12 minutes.
.PHONY: test-compat
test-compat: deploy-tools monitoring-tools ## Run all tests against K8S_VERSION's control plane (make test-compat K8S_VERSION=v1.33.13).
	@[ "$(K8S_VERSION)" != "$(DEFAULT_K8S_VERSION)" ] || { echo "test-compat: set K8S_VERSION to an older pinned version (hack/k8s/v1.*), e.g. K8S_VERSION=v1.33.13" >&2; exit 2; }
	K8S_VERSION=$(K8S_VERSION) hack/build-k8s.sh >/dev/null
	@mkdir -p $(BIN)
	@start=$$(date +%s); KUBEBUILDER_ASSETS=$(K8S_BIN) go test -count=1 -v ./... 2>&1 | tee $(BIN)/test-compat-$(K8S_VERSION).log | hack/test-summary.sh; rc=$${PIPESTATUS[0]}; \
	  echo "test-compat $(K8S_VERSION): $$(( $$(date +%s) - start ))s"; exit $$rc

##@ OLM

BUNDLE_VERSION ?= 0.1.0
.PHONY: bundle
bundle: $(DEPLOY_TOOLS) ## Generate the OLM bundle (bundle/) from config/selfsigned; validated by make test (hack/bundle).
	$(TOOLS_BIN)/kustomize build config/selfsigned | (cd hack/bundle && go run . -out $(CURDIR)/bundle -version $(BUNDLE_VERSION))

# OLM's image holds olm, catalog, package-server, copy-content and cpb (as
# its Dockerfile does); a catalog image holds opm and grpc_health_probe (the
# catalog pod's probes exec it).
OLM_TOOLS := $(addprefix $(TOOLS_BIN)/,olm catalog package-server copy-content cpb opm grpc-health-probe)
$(OLM_TOOLS) &: hack/olm/go.mod hack/olm/go.sum
	cd hack/olm && go build -tags containers_image_openpgp -o $(TOOLS_BIN)/ $(addprefix github.com/operator-framework/operator-lifecycle-manager/,cmd/olm cmd/catalog cmd/package-server cmd/copy-content util/cpb) github.com/operator-framework/operator-registry/cmd/opm github.com/grpc-ecosystem/grpc-health-probe

.PHONY: olm-tools
olm-tools: $(OLM_TOOLS) ## Build OLM's binaries, opm and grpc_health_probe into bin/tools (~6 min cold; not in CI).

# The bundle image the catalog names; a real catalog names it by digest.
BUNDLE_IMAGE ?= localhost/listener-operator-bundle:v$(BUNDLE_VERSION)
OLM_CATALOG  := $(BIN)/olm-catalog
.PHONY: olm-catalog
olm-catalog: olm-tools bundle ## Render bundle/ into a file-based catalog (bin/olm-catalog) and check it with opm validate (not in CI).
	rm -rf $(OLM_CATALOG) && mkdir -p $(OLM_CATALOG)/listener-operator
	$(TOOLS_BIN)/opm init listener-operator --default-channel=alpha --output yaml > $(OLM_CATALOG)/listener-operator/package.yaml
	printf -- '---\nschema: olm.channel\npackage: listener-operator\nname: alpha\nentries:\n- name: listener-operator.v$(BUNDLE_VERSION)\n' >> $(OLM_CATALOG)/listener-operator/package.yaml
	$(TOOLS_BIN)/opm render bundle --output yaml | sed 's|^image: ""$$|image: $(BUNDLE_IMAGE)|' > $(OLM_CATALOG)/listener-operator/bundle.yaml
	$(TOOLS_BIN)/opm validate $(OLM_CATALOG)
	@echo "olm-catalog: $(OLM_CATALOG) is a valid file-based catalog (serve it: $(TOOLS_BIN)/opm serve $(OLM_CATALOG))"

# Not in CI: a real install through OLM on the local cluster (issue 41).
# hack/olm/e2e serves every image from an in-process registry by digest,
# installs OLM v0.38.0 from the chart in its module, subscribes to the
# bundle and checks the CSV, the olm-deployer's objects, a listener and the
# uninstall; the cluster goes down afterwards, passed or failed.
.PHONY: olm-e2e
olm-e2e: olm-tools deploy-tools ## Install the bundle through OLM on a 1-node local cluster and check it (root; ~90 s once olm-tools is built; not in CI).
	{ NODES=1 $(CLUSTER) up && $(CLUSTER) images && $(CLUSTER) render && \
	  cd hack/olm && go run ./e2e -root $(CURDIR) -kubeconfig $(CURDIR)/.work/cluster/kubeconfig -kubectl $(K8S_BIN)/kubectl \
	  -tools $(TOOLS_BIN) -images $(CURDIR)/.work/cluster/images -rendered $(CURDIR)/.work/cluster/deploy.yaml \
	  -work $(CURDIR)/.work/olm -version $(BUNDLE_VERSION) -chart "$$(go list -m -f '{{.Dir}}' github.com/operator-framework/operator-lifecycle-manager)/deploy/chart" \
	  ; } 2>&1 | tee $(BIN)/olm-e2e.log; rc=$$?; $(CLUSTER) down; exit $$rc

.PHONY: test-short
test-short: ## Run only the tests that need no control plane.
	go test -short ./...

# The robustness suite (test/robustness, issue 49): generated histories of
# an administrator's and two tenants' operations, every promise checked
# after each, kwok running the pods on the histories' fake nodes (every run
# needs $(KWOK)). make test plays its fixed seeds; these play more.
ROBUSTNESS_DURATION ?= 30m
ROBUSTNESS_OPS      ?= 30
# Every mutant is a file mutant_<name>.go (with its mutant_<name>_off.go);
# the list is read from the tree, so a new mutant is run without an edit here.
ROBUSTNESS_MUTANTS  := $(sort $(patsubst mutant_%.go,%,$(notdir $(filter-out %_off.go,$(shell git ls-files '*mutant_*.go')))))
.PHONY: robustness
# With Traefik (gateway-tools) against the suite's API server: Gateways and
# gateway classes are played too (-robustness.gateway; make test leaves them out).
robustness: k8s-binaries gateway-tools $(KWOK) ## Play random histories, Traefik and gateway classes included, for ROBUSTNESS_DURATION (default 30m); a failure prints its seed and a shrunk history. Also checks kwok's stages.
	@mkdir -p $(BIN)
	go test -count=1 -v -timeout 0 ./test/robustness/ -run 'TestRandomHistories|TestGatewayRegressions|TestKwokMarksPublishedPodsRunning' -robustness.gateway -robustness.kwok=$(KWOK) \
	  -robustness.duration=$(ROBUSTNESS_DURATION) -robustness.ops=$(ROBUSTNESS_OPS) 2>&1 | tee $(BIN)/robustness.log

# Each mutant re-introduces a fixed defect behind the build tag
# robustness_mutant_<name> (in the package that owns the code); the fixed
# budget must find every one.
.PHONY: robustness-mutants
robustness-mutants: k8s-binaries $(KWOK) ## Play the fixed seeds against each test-only mutant and report which the suite finds.
	@mkdir -p $(BIN); rc=0; for m in $(ROBUSTNESS_MUTANTS); do \
	  out=$$(go test -count=1 -v -tags robustness_mutant_$$m ./test/robustness/ -run 'TestFixedSeeds|TestRegressions' -robustness.shrink=0 2>&1); \
	  echo "$$out" > $(BIN)/robustness-mutant-$$m.log; \
	  line=$$(echo "$$out" | grep -o 'ROBUSTNESS: found.*' | head -1); \
	  if [ -n "$$line" ]; then echo "mutant $$m: $${line#ROBUSTNESS: }"; \
	  else echo "mutant $$m: NOT found ($$(echo "$$out" | grep -o 'ROBUSTNESS: not found: [^;]*' || echo 'see bin/robustness-mutant-'$$m'.log'))"; rc=1; fi; \
	done; exit $$rc

.PHONY: bench
bench: k8s-binaries ## Run the benchmarks and print a table.
	go test -run '^$$' -bench . -benchmem ./... 2>&1 | tee $(BIN)/bench.log | grep -E '^(Benchmark|ok|FAIL|PASS|goos|pkg)'

##@ Binaries (built from the Go module proxy, cached under bin/)

.PHONY: k8s-binaries
k8s-binaries: ## Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl into bin/k8s/$(K8S_VERSION).
	K8S_VERSION=$(K8S_VERSION) hack/build-k8s.sh >/dev/null

$(CONTROLLER_GEN): hack/tools/go.mod hack/tools/go.sum
	cd hack/tools && go build -o $(TOOLS_BIN)/ sigs.k8s.io/controller-tools/cmd/controller-gen

.PHONY: tools
tools: $(CONTROLLER_GEN) ## Build the code generators into bin/tools.

# helm without a cluster (helm template, install --dry-run=client) checks the
# chart's kubeVersion against the version linked in, v1.20 unless set: the
# project's control plane version, as helm's own Makefile does.
HELM_LDFLAGS := $(foreach p,chartutil lint/rules,-X helm.sh/helm/v3/pkg/$(p).k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$(p).k8sVersionMinor=$(word 2,$(subst ., ,$(DEFAULT_K8S_VERSION))))
$(DEPLOY_TOOLS) &: hack/deploy-tools/go.mod hack/deploy-tools/go.sum Makefile
	cd hack/deploy-tools && go build -ldflags '$(HELM_LDFLAGS)' -o $(TOOLS_BIN)/ sigs.k8s.io/kustomize/kustomize/v5 helm.sh/helm/v3/cmd/helm

.PHONY: deploy-tools
deploy-tools: $(DEPLOY_TOOLS) ## Build kustomize and helm into bin/tools.

# promtool checks the chart's alerts (deploy/monitoring_test.go); the e2e
# test runs prometheus against the cluster and screenshots it with chromium.
.PHONY: monitoring-tools
monitoring-tools: ## Install promtool and prometheus (and with CHROMIUM=1 chromium) from Debian's packages, once.
	@hack/monitoring-tools.sh

# Traefik, the gateway of the gateway-class tests (issue 39), built from the
# module proxy (pins: hack/gateway/versions; recipe and cold build time:
# docs/gateway.md), and the Gateway API CRDs of the version it is built
# against, copied into bin/gateway-crds/{standard,experimental}.
.PHONY: gateway-tools
gateway-tools: ## Build Traefik into bin/tools/traefik and copy the Gateway API CRDs into bin/gateway-crds, once (cold: ~5 min on 2 cores).
	@hack/gateway/build-traefik.sh >/dev/null

# MetalLB's controller and speaker (issue 51), the load balancer of the
# LoadBalancer tests, built from the module proxy (pins and why they are
# what they are: hack/metallb/versions), and its CRDs, copied into
# bin/metallb-crds.
.PHONY: metallb-tools
metallb-tools: ## Build MetalLB's controller and speaker into bin/tools/metallb-{controller,speaker} and copy its CRDs into bin/metallb-crds, once (cold: ~10 min on 2 cores).
	@hack/metallb/build.sh >/dev/null

# Not part of `make test` or CI: it records which addresses MetalLB's
# controller gives LoadBalancer Services (sharing keys, asked addresses,
# pools, exhaustion) against an envtest kube-apiserver.
.PHONY: metallb-smoke
metallb-smoke: k8s-binaries metallb-tools ## Run MetalLB's controller against an envtest kube-apiserver and record what it assigns (bin/metallb-smoke.txt).
	go test -count=1 -v -tags metallb -timeout 10m ./hack/metallb/ 2>&1 | tee $(BIN)/metallb-smoke.log

# Not part of `make test` or CI: it records what Traefik writes into the
# Gateway API statuses (docs/gateway.md) and proves a passthrough connection.
.PHONY: gateway-smoke
gateway-smoke: k8s-binaries gateway-tools ## Run Traefik against an envtest kube-apiserver: GatewayClass, Gateway and TLSRoute statuses, SNI passthrough (bin/gateway-smoke.txt).
	go test -count=1 -v -tags gateway -timeout 10m ./hack/gateway/ 2>&1 | tee $(BIN)/gateway-smoke.log

# cert-manager's controller and cainjector (issue 47), built from its
# released module with mains of our own (hack/certmanager; the version is the
# one of the API types in go.mod, checked by make verify), and its CRDs,
# copied into bin/cert-manager-crds. Only the CA and self-signed issuers are
# built. The e2e cluster runs them (CERT_MODE=cert-manager).
.PHONY: cert-manager-tools
cert-manager-tools: ## Build cert-manager's controller and cainjector into bin/tools and copy its CRDs into bin/cert-manager-crds, once (cold: ~7 min on 2 cores).
	@hack/certmanager/build.sh

HELM_CHART := deploy/helm/listener-operator
.PHONY: helm-sync
helm-sync: $(DEPLOY_TOOLS) ## Copy the generated CRDs, RBAC and webhook configurations from config/ into the Helm chart.
	@mkdir -p $(HELM_CHART)/crds $(HELM_CHART)/files
	@cp config/crd/bases/*.yaml $(HELM_CHART)/crds/
	@$(TOOLS_BIN)/kustomize build config/webhook > $(HELM_CHART)/files/webhooks.yaml
	@cp config/rbac/role.yaml $(HELM_CHART)/files/role.yaml
	@cp config/csi/rbac/role.yaml $(HELM_CHART)/files/csi-role.yaml
	@cp config/csi/rbac/node_role.yaml $(HELM_CHART)/files/csi-node-role.yaml
	@cp config/csi/rbac/provisioner_role.yaml $(HELM_CHART)/files/csi-provisioner-role.yaml
	@cp config/admissionpolicies/volume-policy.yaml $(HELM_CHART)/files/volume-policy.yaml
	@cp config/admissionpolicies/node-address-policy.yaml $(HELM_CHART)/files/node-address-policy.yaml
	@cp config/manager/flowschema.yaml $(HELM_CHART)/files/flowschema.yaml
	@{ cat config/csi/csidriver.yaml; echo ---; cat config/csi/storageclass.yaml; } > $(HELM_CHART)/files/csi-driver.yaml

.PHONY: clean
clean: ## Remove built binaries (keeps the cached control plane).
	rm -f $(BIN)/listener-operator $(BIN)/test.log $(BIN)/bench.log $(BIN)/scale.txt

##@ Local cluster (root; loopback and the private bridge listener0 only; state in .work/cluster)

CLUSTER := hack/cluster/cluster.sh

# The operator's webhook certificate mode on the cluster: cert-manager (the
# default install, config/default, with cert-manager built by
# cert-manager-tools and run in-cluster) or self-signed (config/selfsigned).
# make e2e and make demo default to cert-manager; the other cluster targets
# to self-signed.
CERT_MODE ?=

# Nodes of the local cluster: `make cluster-up NODES=3` (or NODES=3 make …).
# cluster-up and demo default to 1, e2e to 2 (the cross-node scenarios need two).
# The cluster is dual-stack (IPv4 first, then IPv6); IP_FAMILIES=ipv4 leaves
# IPv6 out (hack/cluster/settings.sh), and then TestDualStackNodePortOnRealNodes
# fails: it needs both families.
NODES ?=

.PHONY: cluster-up
cluster-up: ## Build what is missing and start a cluster of NODES real nodes (default 1) from source.
	NODES=$(or $(NODES),1) $(CLUSTER) up

.PHONY: cluster-down
cluster-down: ## Stop the local cluster and restore the host (processes, mounts, iptables, bridge, cgroups, sysctls).
	$(CLUSTER) down

.PHONY: demo
demo: ## One command for newcomers: cluster, cert-manager, operator, examples/, and what the pods see (CERT_MODE=self-signed: without cert-manager).
	NODES=$(or $(NODES),1) CERT_MODE=$(or $(CERT_MODE),cert-manager) $(CLUSTER) demo

$(KWOK): hack/kwok/go.mod hack/kwok/go.sum
	cd hack/kwok && go build -o $(KWOK) sigs.k8s.io/kwok/cmd/kwok

SCALE_NODES      ?= 50
SCALE_PODS       ?= 10000
SCALE_SMALL_PODS ?= 2000
SCALE_LISTENERS  ?= 1000
SCALE_SETTLE     ?= 60s
# The rest of the realistic mix (issue 23): ordinary claims, static volumes
# of another driver, Services, namespaces.
SCALE_CLAIMS     ?= 10000
SCALE_VOLUMES    ?= 5000
SCALE_SERVICES   ?= 5000
SCALE_NAMESPACES ?= 2000
# SCALE_PROFILES=dir turns on the controller's pprof endpoint and saves each
# replica's heap profile at every measurement there (default: off, as shipped).
SCALE_PROFILES   ?=
# SCALE_PROFILE_RATE=bytes: with SCALE_PROFILES, one heap sample per this many
# bytes allocated (0: Go's 512 KiB, too coarse for a few hundred objects).
SCALE_PROFILE_RATE ?= 0
# SCALE_FLOOR: pods of each floor burst (default: as many as the last
# listener phase's claims; the 10x point uses 500, the burst the issue
# measures time to Ready for).
SCALE_FLOOR      ?= -1
# SCALE_LIVE_HEAP=true reads the controllers' heap just after a forced
# collection (turns their pprof endpoint on, without heap sampling unless
# SCALE_PROFILES is set: RSS stays as shipped).
SCALE_LIVE_HEAP  ?= false
# SCALE_BATCH: listener pods of a phase created at a time, the next batch
# once those before run; 0 creates them all at once (default: 0 in make
# scale, whose bursts are what time to Ready is measured on; 500 in the 10x
# point).
SCALE_BATCH      ?=
# SCALE_GATEWAY_CLAIMS: per-claim Listeners of a gateway class (a TLSRoute
# each) after the last phase; the harness accepts their routes as a Gateway
# controller would (the kwok cluster has none).
SCALE_GATEWAY_CLAIMS ?= 500

.PHONY: scale
scale: $(KWOK) ## Scale benchmark (~30 min): a 1-node cluster + SCALE_NODES kwok nodes, SCALE_PODS pods, SCALE_LISTENERS claims; prints a table (bin/scale.txt), then tears the cluster down.
	NODES=1 $(CLUSTER) up
	$(CLUSTER) deploy
	go run ./hack/scale -kubeconfig $(CURDIR)/.work/cluster/kubeconfig -kwok $(KWOK) \
	  -kwok-stages "$$(cd hack/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage" \
	  -nodes $(SCALE_NODES) -pods $(SCALE_PODS) -small-pods $(SCALE_SMALL_PODS) -listeners $(SCALE_LISTENERS) \
	  -batch $(or $(SCALE_BATCH),0) -gateway-claims $(SCALE_GATEWAY_CLAIMS) -claims $(SCALE_CLAIMS) -volumes $(SCALE_VOLUMES) -services $(SCALE_SERVICES) -namespaces $(SCALE_NAMESPACES) \
	  -floor $(SCALE_FLOOR) -live-heap=$(SCALE_LIVE_HEAP) -settle $(SCALE_SETTLE) -profiles "$(SCALE_PROFILES)" -profile-rate $(SCALE_PROFILE_RATE) -out $(BIN)/scale.txt; rc=$$?; $(CLUSTER) down; exit $$rc

# The 10x point: 10,000 listener claims with running pods under the shipped
# limits, on a cluster with room for their 6,000 Services (SERVICES_LARGE:
# hack/cluster/settings.sh). Resumable: the cluster is kept (and reused when it is up), and
# objects already there are not created again; `hack/cluster/cluster.sh down`
# when done.
.PHONY: scale-10x
scale-10x: $(KWOK) ## The scale benchmark's 10x point (10,000 listener claims; hours on 2 cores; resumable, keeps the cluster).
	$(CLUSTER) status | grep '^kube-apiserver: running' >/dev/null || { SERVICES_LARGE=1 NODES=1 $(CLUSTER) up && $(CLUSTER) deploy; }
	go run ./hack/scale -kubeconfig $(CURDIR)/.work/cluster/kubeconfig -kwok $(KWOK) \
	  -kwok-stages "$$(cd hack/kwok && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)/kustomize/stage" \
	  -nodes $(SCALE_NODES) -pods $(SCALE_PODS) -small-pods $(SCALE_SMALL_PODS) -listeners 10000 \
	  -batch $(or $(SCALE_BATCH),500) -claims $(SCALE_CLAIMS) -volumes $(SCALE_VOLUMES) -services $(SCALE_SERVICES) -namespaces $(SCALE_NAMESPACES) \
	  -floor $(if $(filter -1,$(SCALE_FLOOR)),500,$(SCALE_FLOOR)) -live-heap=$(SCALE_LIVE_HEAP) -settle $(SCALE_SETTLE) -wait 4h -profiles "$(SCALE_PROFILES)" -profile-rate $(SCALE_PROFILE_RATE) -out $(BIN)/scale-10x.txt

# Time to address on the real nodes (issue 23): a burst of BENCH_PODS pods
# (default 100) with a listener volume against the same burst without one,
# on a cluster of 2 real nodes, and time to Ready with the readiness gate
# against without it (issue 50); the stage table is in bin/bench-address.txt.
# CONTROL_PLANE_QPS=200 raises kube-controller-manager's and kube-scheduler's
# client rate limits (defaults 20 and 50) to see how much is theirs.
.PHONY: bench-address
bench-address: ## Time until a pod reads its address and is Ready (with and without the readiness gate), on 2 real nodes, against the floor (~12 min).
	NODES=2 $(CLUSTER) up
	$(CLUSTER) deploy
	E2E_KUBECONFIG=$(CURDIR)/.work/cluster/kubeconfig go test -count=1 -tags e2e -run '^$$' -bench BenchmarkTimeToAddress -benchtime 1x -timeout 45m ./test/e2e/ 2>&1 | tee $(BIN)/bench-address.txt; rc=$${PIPESTATUS[0]}; $(CLUSTER) down; exit $$rc

.PHONY: e2e
e2e: ## Run test/e2e against a local cluster of NODES nodes (default 2; brings it up, installs cert-manager and MetalLB and deploys the operator first; CERT_MODE=self-signed without cert-manager).
	cd hack/cluster && go test -count=1 ./...
	$(MAKE) --no-print-directory deploy-tools # helm for TestHelmInstallUpgradeUninstall
	CHROMIUM=1 $(MAKE) --no-print-directory monitoring-tools # prometheus and chromium for TestHelmInstallUpgradeUninstall/monitoring
	$(MAKE) --no-print-directory gateway-tools # Traefik and the Gateway API CRDs for TestGatewayClassOnRealNodes (cold: ~5 min)
	$(MAKE) --no-print-directory cert-manager-tools # cert-manager's controller and cainjector (cold: ~7 min)
	$(MAKE) --no-print-directory metallb-tools # MetalLB's controller and speaker for the LoadBalancer tests (cold: ~8 min)
	NODES=$(or $(NODES),2) CLUSTER_DOMAIN=$(or $(CLUSTER_DOMAIN),e2e.listeners.test) $(CLUSTER) up
	CERT_MODE=$(or $(CERT_MODE),cert-manager) $(CLUSTER) deploy
	E2E_KUBECONFIG=$(CURDIR)/.work/cluster/kubeconfig go test -count=1 -v -tags e2e -timeout 45m ./test/e2e/... 2>&1 | tee $(BIN)/e2e.log | hack/test-summary.sh
