// Server-sent events over fetch (EventSource cannot POST or send headers).
// readEvents yields {id, data} for each event of a text/event-stream body;
// comment lines (": keep-alive") are skipped. It returns when the body ends,
// and throws when the connection fails or the signal aborts.

export async function* readEvents(body) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  let id = null;
  let data = [];
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += decoder.decode(value, { stream: true });
      let nl;
      while ((nl = buf.search(/\r\n|\r|\n/)) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + (buf.startsWith("\r\n", nl) ? 2 : 1));
        if (line === "") {
          if (data.length) yield { id, data: data.join("\n") };
          id = null;
          data = [];
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") data.push(value);
        else if (field === "id") id = value;
      }
    }
    if (data.length) yield { id, data: data.join("\n") };
  } finally {
    reader.releaseLock();
  }
}
