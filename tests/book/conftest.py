"""The site tests' fixtures (a built site, a server on 127.0.0.1, a headless Chromium and a tab), from
site_browser.py: module-scoped, so each site test module (one per xdist worker) gets its own browser."""
from site_browser import browser, server, site, tab, visit  # noqa: F401
