// Page setup: the site's theme colour, then the chat panel.
import { initChat } from "./chat.js";

const accent = document.body.dataset.accent;
if (accent && /^#[0-9a-fA-F]{3,6}$/.test(accent)) {
  document.documentElement.style.setProperty("--accent", accent);
}
initChat();
openSection();

// openSection scrolls a document page to the heading a citation named
// (?section=): headings are compared by their letters and digits, since the
// heading path keeps Markdown the page renders (`code`, *emphasis*).
function openSection() {
  const want = new URLSearchParams(location.search).get("section");
  const content = document.getElementById("content");
  if (!want || !content) return;
  const norm = (s) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, "");
  const key = norm(want);
  const h = [...content.querySelectorAll("h1, h2, h3, h4, h5, h6")].find((x) => norm(x.textContent) === key);
  if (!h) return;
  if (h.id) history.replaceState(null, "", location.pathname + location.search + "#" + h.id);
  h.classList.add("cited");
  h.scrollIntoView({ block: "start" });
}
