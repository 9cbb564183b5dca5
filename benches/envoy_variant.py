"""The bench variants of a rendered Envoy bootstrap, changed in place.

usage: python3 benches/envoy_variant.py YAML GATEWAY CLUSTER

GATEWAY names the variant (benches/gateways.sh lists them); CLUSTER is the
upstream's HOST:PORT, which the router and floor variants route every
request to. Other gateways leave the file as it was rendered.

- envoy-jwt-authn-cache: jwt_authn's verified-token cache on, per worker
  thread (only tokens that verified are kept); 100 entries is its
  documented default size.
- envoy-jwt-authn-noedge: the peer without the edge settings the gateway's
  listener has (use_remote_address, internal_address_config), as the peer
  was rendered before 2026-12-07.
- envoy-router: the jwt_authn bootstrap without its checks, every request
  to the upstream.
- envoy-floor*: the filter bootstrap with its wasm filter kept and every
  request to the upstream, since a floor module sets no upstream.
"""
import sys

import yaml


def main(path, gateway, cluster):
    doc = yaml.safe_load(open(path))
    hcm = doc["static_resources"]["listeners"][0]["filter_chains"][0]["filters"][0]["typed_config"]
    if gateway == "envoy-jwt-authn-cache":
        jwt = next(f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.jwt_authn")
        for provider in jwt["typed_config"]["providers"].values():
            provider["jwt_cache_config"] = {"jwt_cache_size": 100}
    if gateway == "envoy-jwt-authn-noedge":
        for setting in ("use_remote_address", "internal_address_config"):
            hcm.pop(setting)
    if gateway == "envoy-router":
        hcm["http_filters"] = [f for f in hcm["http_filters"] if f["name"] == "envoy.filters.http.router"]
    if gateway == "envoy-router" or gateway.startswith("envoy-floor"):
        vhost = hcm["route_config"]["virtual_hosts"][0]
        vhost.pop("request_headers_to_remove", None)
        vhost["routes"] = [{"match": {"prefix": "/"}, "route": {"cluster": cluster, "host_rewrite_literal": cluster}}]
    yaml.safe_dump(doc, open(path, "w"), sort_keys=False)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit("usage: envoy_variant.py YAML GATEWAY CLUSTER")
    main(*sys.argv[1:])
