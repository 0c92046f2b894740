// The JSON-RPC client factory of the official A2A JS SDK with a bearer key on every request
// (cards included), shared by the scripts of tests/protocol_a2a.
import {
  ClientFactory,
  ClientFactoryOptions,
  JsonRpcTransportFactory,
} from "@a2a-js/sdk/client";

export function keyedFactory(key) {
  const authFetch = (input, init = {}) => {
    const headers = new Headers(init.headers ?? {});
    headers.set("Authorization", `Bearer ${key}`);
    return fetch(input, { ...init, headers });
  };
  const options = ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [new JsonRpcTransportFactory({ fetchImpl: authFetch })],
  });
  return new ClientFactory(options);
}
