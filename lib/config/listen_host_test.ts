import assert from "node:assert/strict";
import { isListenHost } from "./listen_host.ts";

Deno.test("listen host: IP addresses and host names are taken", () => {
  for (
    const host of [
      "127.0.0.1",
      "0.0.0.0",
      "::",
      "::1",
      "fe80::1",
      "localhost",
      "gateway",
      "my_service",
      "a.b-c.example.",
    ]
  ) {
    assert.ok(isListenHost(host), host);
  }
});

Deno.test("listen host: a port, a scheme, brackets, a path or spaces are refused", () => {
  for (
    const host of [
      "0.0.0.0:8080",
      "localhost:8080",
      "http://0.0.0.0",
      "[::1]",
      "[::1]:8080",
      "host/x",
      "a b",
      "-x",
      "a..b",
      "x".repeat(64),
    ]
  ) {
    assert.ok(!isListenHost(host), host);
  }
});
