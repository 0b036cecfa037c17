"""Where a recording proxy sends live requests, and how it gets there on the runner's network.

The agent CLI talks to our proxy on 127.0.0.1 directly (the loopback is put in its
`NO_PROXY`); the proxy then reaches the real API the way the SDKs and the CLIs themselves do:
through `HTTPS_PROXY` / `HTTP_PROXY` / `ALL_PROXY` (lower case first) unless `NO_PROXY` matches
the host, trusting the CA bundles the runner names (`SSL_CERT_FILE`, `SSL_CERT_DIR`,
`REQUESTS_CA_BUNDLE`, `CURL_CA_BUNDLE`, `NODE_EXTRA_CA_CERTS`). An `https` API is reached
through a `CONNECT` tunnel, an `http` one with an absolute-form request to the proxy.
"""

from __future__ import annotations

import base64
import functools
import ipaddress
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from aam_eval_action.engines.registry import ENGINES
from aam_eval_action.providers import PROVIDERS, Provider

if TYPE_CHECKING:  # the HTTP and TLS modules load with the first connection, not with every run
    import http.client
    import ssl

UPSTREAM_TIMEOUT = 600.0
LOOPBACK = ("127.0.0.1", "localhost", "::1")
"""What a CLI's `NO_PROXY` gains so that it reaches the local proxies directly."""
CA_FILE_VARS = ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS")
CA_DIR_VARS = ("SSL_CERT_DIR",)


@dataclass(frozen=True)
class Network:
    """The runner's proxy and CA settings, as read from its environment."""

    env: Mapping[str, str] = field(default_factory=dict)
    """The variables below, by name (the rest of the environment is not kept)."""

    @classmethod
    def of(cls, env: Mapping[str, str]) -> Network:
        names = {f"{p}_proxy" for p in ("http", "https", "all", "no")}
        names |= {n.upper() for n in names} | set(CA_FILE_VARS) | set(CA_DIR_VARS)
        return cls({k: v for k, v in env.items() if k in names and v})

    def _get(self, name: str) -> str:
        # Lower case wins, as in curl, urllib and httpx.
        return self.env.get(name.lower()) or self.env.get(name.upper()) or ""

    def proxy_for(self, url: str) -> str | None:
        """The proxy URL a request to `url` goes through, or None for a direct connection."""
        parts = urllib.parse.urlsplit(url)
        if bypassed(parts.hostname or "", parts.port, self._get("no_proxy")):
            return None
        scheme_proxy = self._get(f"{parts.scheme}_proxy")
        return scheme_proxy or self._get("all_proxy") or None

    def ssl_context(self) -> ssl.SSLContext:
        """The default trust store plus every CA bundle the runner names: made once per set of
        bundles (loading one takes tens of milliseconds; a context serves any number of
        connections, from any thread)."""
        files = tuple(self.env[name] for name in CA_FILE_VARS if self.env.get(name))
        folders = tuple(self.env[name] for name in CA_DIR_VARS if self.env.get(name))
        return _context(files, folders)


@functools.lru_cache(maxsize=8)
def _context(files: tuple[str, ...], folders: tuple[str, ...]) -> ssl.SSLContext:
    import ssl

    context = ssl.create_default_context()
    for cafile in dict.fromkeys(files):  # each bundle once, however many variables name it
        context.load_verify_locations(cafile=cafile)
    for capath in dict.fromkeys(folders):
        context.load_verify_locations(capath=capath)
    return context


def bypassed(host: str, port: int | None, no_proxy: str) -> bool:
    """Whether `NO_PROXY` (comma-separated: `*`, hosts, `.domains`, `host:port`, IPs, CIDRs)
    matches a host, as curl and the Python and Node clients read it."""
    host = host.lower().strip("[]")
    for raw in no_proxy.replace(" ", "").split(","):
        entry = raw.lower()
        if not entry:
            continue
        if entry == "*":
            return True
        entry_host, entry_port = _split_port(entry)
        if entry_port is not None and entry_port != port:
            continue
        if "/" in entry_host:
            if _in_network(host, entry_host):
                return True
            continue
        entry_host = entry_host.lstrip(".").strip("[]")
        if host == entry_host or host.endswith("." + entry_host):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("[") and "]:" in entry:
        host, _, port = entry[1:].partition("]:")
        return host, int(port) if port.isdigit() else None
    if entry.count(":") == 1:
        host, _, port = entry.partition(":")
        return host, int(port) if port.isdigit() else None
    return entry, None


def _in_network(host: str, cidr: str) -> bool:
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(cidr, strict=False)
    except ValueError:
        return False


def with_loopback(no_proxy: str) -> str:
    """A `NO_PROXY` value that keeps the user's entries and covers the loopback addresses."""
    entries = [e.strip() for e in no_proxy.split(",") if e.strip()]
    return ",".join(entries + [h for h in LOOPBACK if h not in entries])


def shown(proxy: str) -> str:
    """A proxy URL fit for a message: any user and password left out."""
    parts = urllib.parse.urlsplit(proxy)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


@dataclass(frozen=True)
class Upstream:
    """Where live requests go: a base URL as the CLI would take it, the key, the network."""

    base_url: str
    """Anthropic: like ANTHROPIC_BASE_URL (`https://api.anthropic.com`); OpenAI: like
    OPENAI_BASE_URL, ending in `/v1`."""
    key: str | None = None
    """Replaces the CLI's own key when set (continue-live: the CLI ran with a dummy key)."""
    network: Network = field(default_factory=Network)
    """The runner's proxy and CA settings."""

    def url(self, path: str) -> str:
        """The upstream URL for a proxied path (a `/v1` base and a `/v1/...` path share it)."""
        base = self.base_url.rstrip("/")
        if base.endswith("/v1") and path.startswith("/v1/"):
            path = path[3:]
        return base + path

    def via(self) -> str:
        """How the upstream is reached, for messages: `directly` or `through proxy …`."""
        proxy = self.network.proxy_for(self.base_url)
        return f"through proxy {shown(proxy)}" if proxy else "directly"

    def connect(self, path: str) -> tuple[http.client.HTTPConnection, str, dict[str, str] | None]:
        """A connection for a request to `path`, the request target to send on it, and the
        headers a proxy carrying the request needs (its credentials; None: no proxy carries it,
        it goes direct or through a CONNECT tunnel)."""
        import http.client

        url = urllib.parse.urlsplit(self.url(path))
        target = url.path + (f"?{url.query}" if url.query else "")
        https = url.scheme == "https"
        proxy = self.network.proxy_for(self.url(path))
        context = self.network.ssl_context() if https else None
        if proxy is None and https:
            direct = http.client.HTTPSConnection(url.netloc, timeout=UPSTREAM_TIMEOUT, context=context)
            return direct, target, None
        if proxy is None:
            return http.client.HTTPConnection(url.netloc, timeout=UPSTREAM_TIMEOUT), target, None
        p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        if p.scheme not in ("http", ""):
            raise OSError(f"proxy {shown(proxy)}: only http:// proxies are supported")
        auth = _proxy_auth(p)
        conn: http.client.HTTPConnection
        if https:  # TLS to the API inside a CONNECT tunnel; the proxy sees only host and port
            conn = http.client.HTTPSConnection(p.hostname or "", p.port or 80, timeout=UPSTREAM_TIMEOUT,
                                               context=context)
            conn.set_tunnel(url.hostname or "", url.port or 443, headers=auth)
            return conn, target, None
        conn = http.client.HTTPConnection(p.hostname or "", p.port or 80, timeout=UPSTREAM_TIMEOUT)
        return conn, urllib.parse.urlunsplit((url.scheme, url.netloc, url.path, url.query, "")), auth


def _proxy_auth(proxy: urllib.parse.SplitResult) -> dict[str, str]:
    if proxy.username is None:
        return {}
    user = urllib.parse.unquote(proxy.username)
    password = urllib.parse.unquote(proxy.password or "")
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    return {"Proxy-Authorization": f"Basic {token}"}


def _provider(engine: str, model: str) -> Provider:
    return PROVIDERS[ENGINES[engine].provider_for(model)]


def upstream_for(
    engine: str, env: Mapping[str, str], key: str | None = None, network: Mapping[str, str] | None = None,
    model: str = "",
) -> Upstream:
    """Where the engine's CLI would have sent its requests for `model` (default: the engine's
    default provider): the provider's `*_BASE_URL` in env, else its API; reached through the
    proxies and CAs of `network` (default: those in `env`)."""
    provider = _provider(engine, model)
    base = env.get(provider.base_url_var) or provider.default_base_url
    return Upstream(base, key, Network.of(env if network is None else network))


def proxy_env(engine: str, proxy_url: str, model: str = "") -> dict[str, str]:
    """The run env that points the engine's CLI, running `model`, at a proxy (OpenAI's base URL
    ends in /v1)."""
    provider = _provider(engine, model)
    return {provider.base_url_var: proxy_url + provider.base_url_path}
