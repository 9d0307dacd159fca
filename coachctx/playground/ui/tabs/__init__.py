"""One module per tab; `page.TABS` lists them in order."""
