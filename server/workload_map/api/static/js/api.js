// The server's own endpoints: REST, GraphQL over HTTP, and GraphQL subscriptions over a
// websocket (graphql-transport-ws). The bearer token lives in sessionStorage (this tab only).

const TOKEN_KEY = "wmap.token";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details || [];
  }
}

export const token = () => sessionStorage.getItem(TOKEN_KEY) || "";

let asking = null;
// Ask for a token once (a modal dialog); resolves when the user submitted one.
export function askToken(message) {
  if (asking) return asking;
  const dialog = document.getElementById("token-dialog");
  const input = document.getElementById("token-input");
  const error = document.getElementById("token-error");
  error.hidden = !message;
  error.textContent = message || "";
  input.value = "";
  asking = new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      if (input.value.trim()) sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      asking = null;
      resolve();
    }, { once: true });
  });
  dialog.showModal();
  input.focus();
  return asking;
}

const PROMPTS = 3;  // token prompts per request before its 401 is shown as an error

async function send(url, options = {}, attempt = 0) {
  const headers = { accept: "application/json", ...(options.headers || {}) };
  if (token()) headers.authorization = `Bearer ${token()}`;
  const response = await fetch(url, { ...options, headers });
  if (response.status === 401 && attempt < PROMPTS) {
    await askToken(token() ? "The token was not accepted." : "");
    return send(url, options, attempt + 1);
  }
  const body = await response.json().catch(() => null);
  if (!response.ok) {
    throw new ApiError(response.status, body && body.error, (body && body.message) || response.statusText,
      body && body.details);
  }
  return { body, status: response.status, stale: response.headers.get("x-wmap-stale") };
}

export async function rest(path, params = {}, options = {}) {
  const query = new URLSearchParams(Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== ""));
  const url = query.toString() ? `${path}?${query}` : path;
  return (await send(url, options)).body;
}

export async function gql(query, variables = {}) {
  const { body } = await send("/graphql", {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ query, variables }),
  });
  if (body.errors && body.errors.length) {
    const first = body.errors[0];
    throw new ApiError(200, (first.extensions && first.extensions.code) || "graphql", first.message, []);
  }
  return body.data;
}

// Subscribe to a GraphQL subscription; onEvent(data) per event, onState("live"|"reconnecting").
// Reconnects with a growing delay (at most 30 s). Returns a function that ends it.
export function subscribe(query, variables, onEvent, onState = () => {}) {
  let socket = null;
  let closed = false;
  let delay = 1000;
  const open = () => {
    if (closed) return;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}/graphql`, "graphql-transport-ws");
    socket.onopen = () => {
      const payload = token() ? { Authorization: `Bearer ${token()}` } : {};
      socket.send(JSON.stringify({ type: "connection_init", payload }));
    };
    socket.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type === "connection_ack") {
        delay = 1000;
        onState("live");
        socket.send(JSON.stringify({ id: "1", type: "subscribe", payload: { query, variables } }));
      } else if (frame.type === "next" && frame.payload && frame.payload.data) {
        onEvent(frame.payload.data);
      } else if (frame.type === "ping") {
        socket.send(JSON.stringify({ type: "pong" }));
      }
    };
    socket.onclose = () => {
      if (closed) return;
      onState("reconnecting");
      setTimeout(open, delay);
      delay = Math.min(delay * 2, 30000);
    };
  };
  open();
  return () => {
    closed = true;
    if (socket) socket.close();
  };
}
