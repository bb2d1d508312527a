"""The network: one HTTP/1.1 transport (http1.py, framed by h11, proxies included) for all
that speaks HTTP — the model providers (providers/http_base.py), MCP servers over HTTP
(features/mcp/http.py) and the `web_fetch` tool (tools/web.py) — with what they share above
it: the JSON and event-stream client (http_client.py, sse.py), the cap on what a peer sends
(caps.py), the header check (headers.py) and the proxy rules (proxy.py). A plugin layer:
it imports only core."""
