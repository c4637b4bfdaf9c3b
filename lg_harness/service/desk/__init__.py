"""The desk: what the people who run the agent use, in a browser (``harness serve`` at ``/``) and the CLI.

- ``ops``: the desk's operations on a ``Harness`` (the handoff queue, take, answer, release, the thread list,
  a message's trace, operator figures), shared by the HTTP routes, the pages and ``harness handoff``;
- ``auth``: who is at the desk, from the desk's own keys or a header trusted only from configured proxies;
- ``api``: the JSON routes (and Swagger UI at ``/docs`` from the installed ``swagger-ui-bundle``);
- ``pages`` and ``web``: the server-rendered pages, with ``assets/`` (CSS and a little vanilla JavaScript).

Everything a customer wrote reaches a page as text: escaped in the HTML, set with ``textContent`` in scripts.
"""
