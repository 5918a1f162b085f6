"""Reviewed findings of probesim check on each project of ../shared/realworld (see its SOURCES.md).

One line per finding: rule, kind/namespace/name, container, file (relative to the project) and
line. A rule change that adds or drops findings here must be reviewed and this file updated.

PS032 (reviewed): each is a Deployment of one replica whose rolling update takes that pod down
before its replacement is Ready, so every rollout leaves its Service with no endpoint, whatever the
load — ingress-nginx's controller (maxUnavailable 1), kiali (maxSurge 1, maxUnavailable 1) and
sockshop's prometheus (maxSurge 0, maxUnavailable 1). Deployments of one replica with the default
25 %/25 % surge a pod first and are not reported; nor are StatefulSets of one replica (argocd's
application controller, loki, opensearch, podinfo's database primary): a single instance cannot
stay up through its own replacement, which no strategy changes, and without a scenario no load is
assumed.

PS013 (reviewed, from the app's profile, no scenario): liveness that acts before a documented
slow start — the Prometheus servers of istio-samples and otel-demo (60 s and 45 s before liveness
acts; a large WAL takes minutes to replay, the operator's own startup probe allows 15), the
k8s-website MySQL StatefulSet (crash recovery) and its etcd Pod (kubeadm's startup probe allows
4 minutes), and k8s-examples' Cassandra StatefulSet (liveness acts after 45 s; the commit log is
replayed on start, up to 5 minutes assumed; its PS033 is then PS013's). PS033 (info): a liveness
initialDelaySeconds above 10 s with no startup probe.

Containers whose Service ports only expose metrics (argocd-notifications-controller's metrics
port, sockshop's rabbitmq-exporter) serve no client traffic and are not asked for readiness.

PS019 (reviewed): argocd-server and kiali probe readiness every 30 s with failureThreshold 3, so a
pod that stops answering keeps its Service's traffic for 91 s. PS015 (reviewed): the k8s-website
MySQL StatefulSet's exec readiness (mysql -e "SELECT 1") sets timeoutSeconds: 1 explicitly, too
short for a process start under load. PS030 is not reported on istio-samples' coredump DaemonSet:
its only container runs `sleep infinity` and serves nothing.

PS034 (reviewed, info): otel-demo's OpenSearch readiness opens a TCP connection to 9200, its
HTTP port: a wedged node still accepts it; the fix is the profile's _cluster/health?local=true.

PS006 (reviewed, info): liveness and readiness on one HTTP path. Some of those paths check a
dependency — Grafana's /api/health reports its database, sock-shop's catalogue and user /health
report their databases — so a database outage restarts every pod; others (jaeger's admin /) may be
self-contained, which only the owner can say (the finding says how to record it). ingress-nginx's
/healthz is the controller's own process check (its profile says so): not reported.

Disruption rules (reviewed, issue 45). PS035: k8s-examples' cockroachdb-budget has minAvailable 67 %
of 3 replicas, which the disruption controller rounds up to 3 (ceil(2.01)): no eviction is ever
allowed, every drain of those nodes stalls; CockroachDB is a quorum system (Raft ranges), so the fix
says 2 of 3 stay up, and its preferred anti-affinity gets PS037 (a quorum needs the required term,
as etcd's does). Its PS001 fix is CockroachDB's /health?ready=1 on port 8080 (it was a gRPC probe
on 26257 while the start script's comments, "the first node", made it Node.js). Cassandra is a
quorum system too (QUORUM consistency), so its PS037 asks for the required anti-affinity.
PS037 (warning) and PS039 (info): the multi-replica
Deployments, StatefulSets, ReplicaSets and ReplicationControllers with no spreading on
kubernetes.io/hostname and no budget (the guestbook frontend, cassandra, meteor, the k8s-website
controllers' examples and mysql, podinfo's frontend, database replica and podinfo at their HPA's
minimum of 2); kube-prometheus' prometheus-adapter has a budget but no spreading (PS037 only).
kube-prometheus' alertmanager-main and prometheus-k8s budgets select pods that the Prometheus
Operator's Alertmanager and Prometheus resources run: not reported by PS036 (a namespace with a
custom resource probesim does not read). k8s-website's zookeeper (required anti-affinity on the
hostname, maxUnavailable 1) has none."""

EXPECTED: dict[str, list[str]] = {
    "argocd": [
        "PS001 Deployment/default/argocd-applicationset-controller argocd-applicationset-controller install.yaml:32129",
        "PS001 Deployment/default/argocd-dex-server dex install.yaml:32472",
        "PS001 Deployment/default/argocd-redis redis install.yaml:32743",
        "PS014 Deployment/default/argocd-repo-server argocd-repo-server install.yaml:33112",
        "PS033 Deployment/default/argocd-repo-server argocd-repo-server install.yaml:33117",
        "PS014 Deployment/default/argocd-server argocd-server install.yaml:33663",
        "PS019 Deployment/default/argocd-server argocd-server install.yaml:33674",
    ],
    "bookinfo": [
        "PS001 Deployment/default/details-v1 details bookinfo.yaml:74",
        "PS001 Deployment/default/ratings-v1 ratings bookinfo.yaml:125",
        "PS001 Deployment/default/reviews-v1 reviews bookinfo.yaml:176",
        "PS001 Deployment/default/reviews-v2 reviews bookinfo.yaml:216",
        "PS001 Deployment/default/reviews-v3 reviews bookinfo.yaml:256",
        "PS001 Deployment/default/productpage-v1 productpage bookinfo.yaml:324",
    ],
    "dapr-quickstarts": [
        "PS001 Deployment/default/bindings-nodeapp node bindings/node.yaml:38",
        "PS001 Deployment/default/calculator-front-end calculator-front-end distributed-calculator/react-calculator.yaml:39",
        "PS001 Deployment/default/nodeapp node hello-kubernetes/node.yaml:39",
        "PS001 Deployment/default/react-form react-form pub-sub/react-form.yaml:38",
    ],
    "emojivoto": [
        "PS001 Deployment/emojivoto/emoji emoji-svc emoji.yml:30",
        "PS001 Deployment/emojivoto/voting voting-svc voting.yml:30",
        "PS001 Deployment/emojivoto/web web-svc web.yml:30",
    ],
    "ingress-nginx": [
        "PS032 Deployment/ingress-nginx/ingress-nginx-controller controller deploy.yaml:425",
        "PS014 Deployment/ingress-nginx/ingress-nginx-controller controller deploy.yaml:453",
        "PS018 Deployment/ingress-nginx/ingress-nginx-controller controller deploy.yaml:453",
        "PS004 Deployment/ingress-nginx/ingress-nginx-controller controller deploy.yaml:457",
        "PS004 Deployment/ingress-nginx/ingress-nginx-controller controller deploy.yaml:478",
    ],
    "istio-samples": [
        "PS014 Deployment/istio-system/grafana grafana addons/grafana.yaml:204",
        "PS006 Deployment/istio-system/grafana grafana addons/grafana.yaml:207",
        "PS033 Deployment/istio-system/grafana grafana addons/grafana.yaml:209",
        "PS011 Deployment/istio-system/grafana grafana addons/grafana.yaml:210",
        "PS003 Deployment/istio-system/jaeger jaeger addons/jaeger.yaml:27",
        "PS006 Deployment/istio-system/jaeger jaeger addons/jaeger.yaml:29",
        "PS032 Deployment/istio-system/kiali kiali addons/kiali.yaml:389",
        "PS019 Deployment/istio-system/kiali kiali addons/kiali.yaml:412",
        "PS003 Deployment/istio-system/kiali kiali addons/kiali.yaml:419",
        "PS014 Deployment/istio-system/kiali kiali addons/kiali.yaml:419",
        "PS006 Deployment/istio-system/kiali kiali addons/kiali.yaml:421",
        "PS003 Deployment/istio-system/prometheus prometheus-server-configmap-reload addons/prometheus.yaml:486",
        "PS014 Deployment/istio-system/prometheus prometheus-server-configmap-reload addons/prometheus.yaml:486",
        "PS018 Deployment/istio-system/prometheus prometheus-server-configmap-reload addons/prometheus.yaml:486",
        "PS006 Deployment/istio-system/prometheus prometheus-server-configmap-reload addons/prometheus.yaml:488",
        "PS013 Deployment/istio-system/prometheus prometheus-server addons/prometheus.yaml:526",
        "PS014 Deployment/istio-system/prometheus prometheus-server addons/prometheus.yaml:526",
        "PS018 Deployment/istio-system/prometheus prometheus-server addons/prometheus.yaml:526",
        "PS001 Deployment/default/curl curl curl/curl.yaml:54",
        "PS001 Deployment/default/ext-authz ext-authz extauthz/ext-authz.yaml:50",
        "PS014 Deployment/echo-grpc/echo-v1 app grpc-echo/grpc-echo.yaml:71",
        "PS014 Deployment/echo-grpc/echo-v2 app grpc-echo/grpc-echo.yaml:156",
        "PS001 Deployment/default/liveness liveness health-check/liveness-command.yaml:46",
        "PS015 Deployment/default/liveness liveness health-check/liveness-command.yaml:52",
        "PS001 Deployment/default/liveness-http liveness-http health-check/liveness-http-same-port.yaml:31",
        "PS001 Deployment/default/helloworld-v1 helloworld helloworld/helloworld.yaml:35",
        "PS001 Deployment/default/helloworld-v2 helloworld helloworld/helloworld.yaml:64",
        "PS001 Deployment/default/httpbin httpbin httpbin/httpbin.yaml:56",
        "PS001 Deployment/default/fortio-deploy fortio httpbin/sample-client/fortio-deploy.yaml:42",
        "PS014 Deployment/default/mtls-echo-v1 app mtls-echo/mtls-echo.yaml:56",
        "PS001 Deployment/default/redis redis ratelimit/rate-limit-service.yaml:67",
        "PS001 Deployment/default/ratelimit ratelimit ratelimit/rate-limit-service.yaml:116",
        "PS001 Deployment/default/tcp-echo tcp-echo tcp-echo/tcp-echo.yaml:52",
        "PS021 DestinationRule/default/locality - testdata-networking/destination-rule-locality.yaml:12",
    ],
    "k8s-dashboard": [
        "PS001 Deployment/kubernetes-dashboard/kubernetes-dashboard kubernetes-dashboard recommended.yaml:192",
        "PS033 Deployment/kubernetes-dashboard/kubernetes-dashboard kubernetes-dashboard recommended.yaml:216",
        "PS011 Deployment/kubernetes-dashboard/kubernetes-dashboard kubernetes-dashboard recommended.yaml:217",
        "PS001 Deployment/kubernetes-dashboard/dashboard-metrics-scraper dashboard-metrics-scraper recommended.yaml:277",
        "PS033 Deployment/kubernetes-dashboard/dashboard-metrics-scraper dashboard-metrics-scraper recommended.yaml:287",
        "PS011 Deployment/kubernetes-dashboard/dashboard-metrics-scraper dashboard-metrics-scraper recommended.yaml:288",
    ],
    "k8s-examples": [
        "PS001 Deployment/default/vllm-gemma-deployment inference-server AI_vllm-deployment_vllm-deployment.yaml:20",
        "PS035 PodDisruptionBudget/default/cockroachdb-budget - _archived_cockroachdb_cockroachdb-statefulset.yaml:67",
        "PS037 StatefulSet/default/cockroachdb - _archived_cockroachdb_cockroachdb-statefulset.yaml:85",
        "PS001 StatefulSet/default/cockroachdb cockroachdb _archived_cockroachdb_cockroachdb-statefulset.yaml:127",
        "PS001 ReplicationController/default/my-nginx nginxhttps _archived_https-nginx_nginx-app.yaml:38",
        "PS033 ReplicationController/default/my-nginx nginxhttps _archived_https-nginx_nginx-app.yaml:48",
        "PS039 ReplicationController/default/meteor-controller - _archived_meteor_meteor-controller.json:11",
        "PS037 ReplicationController/default/meteor-controller - _archived_meteor_meteor-controller.json:18",
        "PS001 ReplicationController/default/meteor-controller meteor _archived_meteor_meteor-controller.json:20",
        "PS001 Pod/default/mongo mongo _archived_meteor_mongo-pod.json:22",
        "PS003 Deployment/default/selenium-hub selenium-hub _archived_selenium_selenium-hub-deployment.yaml:28",
        "PS006 Deployment/default/selenium-hub selenium-hub _archived_selenium_selenium-hub-deployment.yaml:30",
        "PS033 Deployment/default/selenium-hub selenium-hub _archived_selenium_selenium-hub-deployment.yaml:32",
        "PS033 ReplicationController/default/spark-ui-proxy-controller spark-ui-proxy _archived_spark_spark-ui-proxy-controller.yaml:28",
        "PS001 Pod/default/nimbus nimbus _archived_storm_storm-nimbus.json:12",
        "PS001 Pod/default/zookeeper zookeeper _archived_storm_zookeeper.json:12",
        "PS039 StatefulSet/default/cassandra - databases_cassandra_cassandra-statefulset.yaml:9",
        "PS037 StatefulSet/default/cassandra - databases_cassandra_cassandra-statefulset.yaml:17",
        "PS013 StatefulSet/default/cassandra cassandra databases_cassandra_cassandra-statefulset.yaml:79",
        "PS014 StatefulSet/default/cassandra cassandra databases_cassandra_cassandra-statefulset.yaml:79",
        "PS018 StatefulSet/default/cassandra cassandra databases_cassandra_cassandra-statefulset.yaml:79",
        "PS039 Deployment/default/frontend - web_guestbook_frontend-deployment.yaml:10",
        "PS037 Deployment/default/frontend - web_guestbook_frontend-deployment.yaml:16",
        "PS001 Deployment/default/frontend php-redis web_guestbook_frontend-deployment.yaml:18",
    ],
    "k8s-website": [
        "PS039 StatefulSet/default/mysql - application/mysql/mysql-statefulset.yaml:10",
        "PS037 StatefulSet/default/mysql - application/mysql/mysql-statefulset.yaml:15",
        "PS013 StatefulSet/default/mysql mysql application/mysql/mysql-statefulset.yaml:83",
        "PS015 StatefulSet/default/mysql mysql application/mysql/mysql-statefulset.yaml:89",
        "PS001 Deployment/default/php-apache php-apache application/php-apache.yaml:15",
        "PS003 StatefulSet/default/zk kubernetes-zookeeper application/zookeeper/zookeeper.yaml:112",
        "PS030 DaemonSet/kube-system/fluentd-elasticsearch fluentd-elasticsearch controllers/daemonset.yaml:21",
        "PS039 ReplicaSet/default/frontend - controllers/frontend.yaml:10",
        "PS037 ReplicaSet/default/frontend - controllers/frontend.yaml:18",
        # The HPA of hpa-rs.yaml targets CPU utilization of pods that request no CPU: it never scales.
        "PS043 ReplicaSet/default/frontend php-redis controllers/frontend.yaml:20",
        "PS039 Deployment/default/nginx-deployment - controllers/nginx-deployment.yaml:8",
        "PS037 Deployment/default/nginx-deployment - controllers/nginx-deployment.yaml:16",
        "PS039 ReplicationController/default/nginx - controllers/replication.yaml:9",
        "PS037 ReplicationController/default/nginx - controllers/replication.yaml:20",
        "PS001 ReplicationController/default/nginx nginx controllers/replication.yaml:21",
        "PS039 StatefulSet/default/web - controllers/statefulset.yaml:24",
        "PS037 StatefulSet/default/web - controllers/statefulset.yaml:30",
        "PS001 StatefulSet/default/web nginx controllers/statefulset.yaml:33",
        "PS015 Pod/default/liveness-exec liveness pods-probe/exec-liveness.yaml:15",
        "PS013 Pod/default/etcd-with-grpc etcd pods-probe/grpc-liveness.yaml:26",
        "PS033 Pod/default/pod-with-http-healthcheck nginx pods-probe/pod-with-http-healthcheck.yaml:21",
        "PS033 Pod/default/pod-with-tcp-socket-healthcheck redis pods-probe/pod-with-tcp-socket-healthcheck.yaml:20",
        "PS003 Pod/default/goproxy goproxy pods-probe/tcp-liveness-readiness.yaml:18",
        "PS033 Pod/default/goproxy goproxy pods-probe/tcp-liveness-readiness.yaml:21",
    ],
    "knative-samples": [],
    "kube-prometheus": [
        "PS001 Deployment/monitoring/blackbox-exporter blackbox-exporter blackboxExporter-deployment.yaml:30",
        "PS001 Deployment/monitoring/blackbox-exporter kube-rbac-proxy blackboxExporter-deployment.yaml:85",
        "PS001 Deployment/monitoring/kube-state-metrics kube-rbac-proxy-main kubeStateMetrics-deployment.yaml:55",
        "PS001 Deployment/monitoring/kube-state-metrics kube-rbac-proxy-self kubeStateMetrics-deployment.yaml:82",
        "PS030 DaemonSet/monitoring/node-exporter node-exporter nodeExporter-daemonset.yaml:29",
        "PS001 DaemonSet/monitoring/node-exporter kube-rbac-proxy nodeExporter-daemonset.yaml:67",
        "PS037 Deployment/monitoring/prometheus-adapter - prometheusAdapter-deployment.yaml:31",
        "PS001 Deployment/monitoring/prometheus-operator kube-rbac-proxy prometheusOperator-deployment.yaml:58",
    ],
    "kube-prometheus-kp2": [
        "PS001 Deployment/monitoring/blackbox-exporter blackbox-exporter blackboxExporter-deployment.yaml:30",
        "PS001 Deployment/monitoring/blackbox-exporter kube-rbac-proxy blackboxExporter-deployment.yaml:85",
        "PS001 Deployment/monitoring/kube-state-metrics kube-rbac-proxy-main kubeStateMetrics-deployment.yaml:55",
        "PS001 Deployment/monitoring/kube-state-metrics kube-rbac-proxy-self kubeStateMetrics-deployment.yaml:82",
        "PS030 DaemonSet/monitoring/node-exporter node-exporter nodeExporter-daemonset.yaml:29",
        "PS001 DaemonSet/monitoring/node-exporter kube-rbac-proxy nodeExporter-daemonset.yaml:67",
        "PS037 Deployment/monitoring/prometheus-adapter - prometheusAdapter-deployment.yaml:31",
        "PS001 Deployment/monitoring/prometheus-operator kube-rbac-proxy prometheusOperator-deployment.yaml:58",
    ],
    "msdemo": [
        "PS006 Deployment/default/frontend server msdemo.yaml:67",
        "PS003 Deployment/default/adservice server msdemo.yaml:198",
        "PS033 Deployment/default/adservice server msdemo.yaml:199",
        "PS003 Deployment/default/currencyservice server msdemo.yaml:267",
        "PS003 Deployment/default/cartservice server msdemo.yaml:346",
        "PS033 Deployment/default/cartservice server msdemo.yaml:347",
        "PS045 Deployment/default/redis-cart redis msdemo.yaml:406",
        "PS003 Deployment/default/redis-cart redis msdemo.yaml:408",
        "PS003 Deployment/default/recommendationservice server msdemo.yaml:566",
        "PS003 Deployment/default/checkoutservice server msdemo.yaml:641",
        "PS003 Deployment/default/emailservice server msdemo.yaml:730",
        "PS003 Deployment/default/paymentservice server msdemo.yaml:804",
        "PS003 Deployment/default/productcatalogservice server msdemo.yaml:950",
    ],
    "otel-demo": [
        "PS014 Deployment/otel-demo/grafana grafana opentelemetry-demo.yaml:18169",
        "PS006 Deployment/otel-demo/grafana grafana opentelemetry-demo.yaml:18172",
        "PS033 Deployment/otel-demo/grafana grafana opentelemetry-demo.yaml:18174",
        "PS011 Deployment/otel-demo/grafana grafana opentelemetry-demo.yaml:18175",
        "PS014 Deployment/default/jaeger jaeger opentelemetry-demo.yaml:18278",
        "PS006 Deployment/default/jaeger jaeger opentelemetry-demo.yaml:18281",
        "PS004 Deployment/default/jaeger jaeger opentelemetry-demo.yaml:18282",
        "PS004 Deployment/default/jaeger jaeger opentelemetry-demo.yaml:18292",
        "PS003 Deployment/otel-demo/otel-collector opentelemetry-collector opentelemetry-demo.yaml:18387",
        "PS006 Deployment/otel-demo/otel-collector opentelemetry-collector opentelemetry-demo.yaml:18389",
        "PS004 Deployment/otel-demo/otel-collector opentelemetry-collector opentelemetry-demo.yaml:18390",
        "PS004 Deployment/otel-demo/otel-collector opentelemetry-collector opentelemetry-demo.yaml:18394",
        "PS013 Deployment/otel-demo/prometheus prometheus-server opentelemetry-demo.yaml:18469",
        "PS014 Deployment/otel-demo/prometheus prometheus-server opentelemetry-demo.yaml:18469",
        "PS018 Deployment/otel-demo/prometheus prometheus-server opentelemetry-demo.yaml:18469",
        "PS001 Deployment/default/ad ad opentelemetry-demo.yaml:18601",
        "PS001 Deployment/default/cart cart opentelemetry-demo.yaml:18667",
        "PS001 Deployment/default/checkout checkout opentelemetry-demo.yaml:18743",
        "PS001 Deployment/default/currency currency opentelemetry-demo.yaml:18830",
        "PS001 Deployment/default/email email opentelemetry-demo.yaml:18892",
        "PS001 Deployment/default/flagd flagd opentelemetry-demo.yaml:18958",
        "PS001 Deployment/default/flagd flagd-ui opentelemetry-demo.yaml:19000",
        "PS001 Deployment/default/frontend frontend opentelemetry-demo.yaml:19156",
        "PS001 Deployment/default/frontend-proxy frontend-proxy opentelemetry-demo.yaml:19250",
        "PS001 Deployment/default/image-provider image-provider opentelemetry-demo.yaml:19348",
        "PS001 Deployment/default/kafka kafka opentelemetry-demo.yaml:19410",
        "PS001 Deployment/default/load-generator load-generator opentelemetry-demo.yaml:19484",
        "PS001 Deployment/default/payment payment opentelemetry-demo.yaml:19566",
        "PS001 Deployment/default/postgresql postgresql opentelemetry-demo.yaml:19634",
        "PS001 Deployment/default/product-catalog product-catalog opentelemetry-demo.yaml:19696",
        "PS001 Deployment/default/quote quote opentelemetry-demo.yaml:19769",
        "PS001 Deployment/default/recommendation recommendation opentelemetry-demo.yaml:19837",
        "PS001 Deployment/default/shipping shipping opentelemetry-demo.yaml:19907",
        "PS001 Deployment/default/valkey-cart valkey-cart opentelemetry-demo.yaml:19969",
        "PS034 StatefulSet/default/opensearch opensearch opentelemetry-demo.yaml:20097",
    ],
    "podinfo-deploy": [
        "PS039 Deployment/default/database-replica - bases/database/deployment-replica.yaml:5",
        "PS037 Deployment/default/database-replica - bases/database/deployment-replica.yaml:24",
        "PS039 Deployment/default/frontend - bases/frontend/deployment.yaml:5",
        "PS037 Deployment/default/frontend - bases/frontend/deployment.yaml:23",
    ],
    "podinfo-kustomize": [
        "PS039 Deployment/default/podinfo - deployment.yaml:5",
        "PS037 Deployment/default/podinfo - deployment.yaml:23",
    ],
    "sockshop": [
        "PS001 Deployment/kube-system/monitoring-grafana grafana autoscaling/grafana-deployment.yaml:19",
        "PS001 Deployment/kube-system/heapster heapster autoscaling/heapster-deployment.yaml:20",
        "PS001 Deployment/kube-system/monitoring-influxdb influxdb autoscaling/influxdb-deployment.yaml:19",
        "PS001 Deployment/sock-shop/carts carts complete-demo.yaml:25",
        "PS001 Deployment/sock-shop/carts-db carts-db complete-demo.yaml:93",
        "PS003 Deployment/sock-shop/catalogue catalogue complete-demo.yaml:173",
        "PS006 Deployment/sock-shop/catalogue catalogue complete-demo.yaml:175",
        "PS033 Deployment/sock-shop/catalogue catalogue complete-demo.yaml:177",
        "PS001 Deployment/sock-shop/catalogue-db catalogue-db complete-demo.yaml:223",
        "PS003 Deployment/sock-shop/front-end front-end complete-demo.yaml:288",
        "PS006 Deployment/sock-shop/front-end front-end complete-demo.yaml:290",
        "PS033 Deployment/sock-shop/front-end front-end complete-demo.yaml:292",
        "PS001 Deployment/sock-shop/orders orders complete-demo.yaml:339",
        "PS001 Deployment/sock-shop/orders-db orders-db complete-demo.yaml:407",
        "PS003 Deployment/sock-shop/payment payment complete-demo.yaml:484",
        "PS006 Deployment/sock-shop/payment payment complete-demo.yaml:486",
        "PS033 Deployment/sock-shop/payment payment complete-demo.yaml:488",
        "PS001 Deployment/sock-shop/queue-master queue-master complete-demo.yaml:534",
        "PS001 Deployment/sock-shop/rabbitmq rabbitmq complete-demo.yaml:588",
        "PS001 Deployment/sock-shop/session-db session-db complete-demo.yaml:656",
        "PS001 Deployment/sock-shop/shipping shipping complete-demo.yaml:706",
        "PS003 Deployment/sock-shop/user user complete-demo.yaml:800",
        "PS006 Deployment/sock-shop/user user complete-demo.yaml:802",
        "PS033 Deployment/sock-shop/user user complete-demo.yaml:804",
        "PS001 Deployment/sock-shop/user-db user-db complete-demo.yaml:851",
        "PS001 Deployment/kube-system/elasticsearch elasticsearch manifests-logging/elasticsearch.yml:20",
        "PS030 DaemonSet/kube-system/fluentd fluentd manifests-logging/fluentd-daemon.yml:21",
        "PS001 Deployment/kube-system/kibana kibana manifests-logging/kibana.yml:20",
        "PS001 Deployment/monitoring/prometheus-deployment prometheus manifests-monitoring/06-prometheus-dep.yaml:24",
        "PS032 Deployment/monitoring/prometheus-deployment prometheus manifests-monitoring/06-prometheus-dep.yaml:24",
        "PS030 DaemonSet/monitoring/node-directory-size-metrics read-du manifests-monitoring/08-prometheus-exporter-disk-usage-ds.yaml:32",
        "PS001 DaemonSet/monitoring/node-exporter node-exporter manifests-monitoring/25-prometheus-node-exporter-daemonset.yaml:21",
        "PS030 DaemonSet/monitoring/node-exporter node-exporter manifests-monitoring/25-prometheus-node-exporter-daemonset.yaml:21",
    ],
}
# Projects that stop, with the start of the one-line reason they stop with.
STOPS: dict[str, str] = {
    "metrics-server": "spec.selector: required field is missing (apps/v1 needs a selector); a kustomize base?",
    "podinfo-chart": "is an unrendered Helm chart: run `helm template",
}

# Checked as one directory, all projects are one cluster's objects: sockshop's kube-state-metrics
# Service (namespace monitoring, selecting app.kubernetes.io/name: kube-state-metrics) then also
# selects both kube-prometheus copies' kube-state-metrics pods; its ports only expose metrics, so
# no readiness is asked for, and the findings are each project's own. Except for two, from the
# disruption rules: podinfo-deploy's HPA of Deployment default/frontend (min 2) then also scales
# msdemo's and otel-demo's Deployments of that identity (one object per kind, namespace and name),
# which so become multi-replica (PS037, PS039); and metrics-server's high-availability budget
# (kube-system) selects the pods of its base's Deployment, which is an error entry (no selector),
# while kube-system holds other projects' workloads: PS036.
WHOLE_EXTRA: list[str] = [
    "PS036 PodDisruptionBudget/kube-system/metrics-server - metrics-server/components/high-availability/pdb.yaml:11",
    "PS037 Deployment/default/frontend - msdemo/msdemo.yaml:37",
    "PS037 Deployment/default/frontend - otel-demo/opentelemetry-demo.yaml:19153",
    "PS039 Deployment/default/frontend - msdemo/msdemo.yaml:27",
    "PS039 Deployment/default/frontend - otel-demo/opentelemetry-demo.yaml:19139",
    # podinfo-deploy's HPA frontend (CPU) read over otel-demo's Deployment frontend, which requests none
    "PS043 Deployment/default/frontend frontend otel-demo/opentelemetry-demo.yaml:19209",
]

# How many workloads each project's check lints (its report's ``linted`` list): every pod template
# read, including custom resources'. knative-samples' eight Knative Services (serving.knative.dev)
# were read past as custom resources before issue 40; they are linted now, with no finding (queue-
# proxy's default readiness probe covers the containers that declare none).
LINTED: dict[str, int] = {
    "argocd": 7,
    "bookinfo": 6,
    "dapr-quickstarts": 13,
    "emojivoto": 4,
    "ingress-nginx": 3,
    "istio-samples": 20,
    "k8s-dashboard": 2,
    "k8s-examples": 12,
    "k8s-website": 17,
    "knative-samples": 8,
    "kube-prometheus": 6,
    "kube-prometheus-kp2": 6,
    "metrics-server": 0,
    "msdemo": 12,
    "otel-demo": 25,
    "podinfo-deploy": 13,
    "podinfo-kustomize": 1,
    "sockshop": 27,
}
