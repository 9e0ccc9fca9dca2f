"""The links check of a MkDocs site, judged from source as MkDocs would build it.

A product of its own beside the record checks (``check/``): it reads a site's
``mkdocs.yml`` (parsed so that nothing it names runs), renders each page with the
Markdown extensions atlas knows, models the plugins and hooks that change what MkDocs
validates, and reports each broken link or anchor as a finding. The record checks and
the commit checks reach it through ``check/routing.py``, which hands each Markdown file
of a site to ``sitelinks.SiteLinks``; it imports nothing of theirs.
What it shares with them lives one row down: findings (``findings.py``) and the files a
check reads, from disk or from git's index (``filesources.py``).
"""
