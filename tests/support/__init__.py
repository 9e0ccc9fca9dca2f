"""What the real-harness tests share: a scripted stand-in for a model's HTTP API
(``scripted_model``), the pinned harness binaries installed from npm once per run
(``harness_tools``), and one session of a real harness run against the stand-in
(``sessions``)."""
