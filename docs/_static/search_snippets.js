// The course website (docs/conf.py): a search result's snippet comes from the page's own text, not
// from the theme's chrome inside [role="main"] (the article header's buttons read "System Settings
// Light Dark" and would start every snippet; its "Contents" list of sections would follow). Sphinx's searchtools.js builds snippets with
// Search.htmlToText; this wraps it to drop that chrome first.
(() => {
  const CHROME = [
    ".bd-header-article", ".header-article-items", ".theme-switch-button", ".article-header-buttons",
    ".bd-sidebar-primary", ".bd-sidebar-secondary", ".bd-footer-article", ".prev-next-area",
    ".bd-search", ".search-button-field", "button", "nav", ".bd-toc", ".page-toc", "[class*='toc']",
  ].join(", ");
  const patch = () => {
    if (typeof Search === "undefined" || Search.courseSnippets) return;
    const original = Search.htmlToText;
    Search.htmlToText = (htmlString, anchor) => {
      const page = new DOMParser().parseFromString(htmlString, "text/html");
      page.querySelectorAll(CHROME).forEach((el) => el.remove());
      return original(page.documentElement.outerHTML, anchor);
    };
    Search.courseSnippets = true;
  };
  patch();
  document.addEventListener("DOMContentLoaded", patch);
})();
