"""The Ray backend (``execution: {backend: ray}``): the same evaluation as the local backend, spread over a cluster.

Static/compile work runs in a pool of CPU actors, each initialized once with :func:`init_worker` (it imports
torch and Triton, which takes seconds); measurement runs in one actor per GPU that hosts the local GPU
worker's :func:`serve` loop. Both keep the local backend's isolation rules: one call in flight per actor and a
deadline per call; a call past its deadline, or one whose actor dies, becomes a failed TrialRecord with the
same wording as the local pool, and the actor is killed and re-created. A fatal CUDA error restarts the GPU
actor (its context is poisoned). Actors are independent processes, so unlike the local pool a crash never
forces the other in-flight candidates to run again. Records flow back to the campaign loop, which stores them.

Ray is imported only when this backend is chosen. ``address: auto`` joins a running cluster (``RAY_ADDRESS``,
the latest ``ray start``, or a Ray instance found running on this machine), else starts a local instance
limited to ``evaluation.workers`` CPUs; ``address: local`` always starts one. A local instance we started is
shut down at the end; a cluster we joined is only disconnected from; a connection the caller made is left
alone. Workers import paretotune by module, so it must be installed (or be the driver's working directory) on
every node; ACF bytes travel with each call, so nodes need no shared filesystem for them. Worker output goes to
Ray's logs (``/tmp/ray/session_latest/logs``), not the terminal.

Modules: :mod:`.session` (joining or starting Ray), :mod:`.actors` (a set of actors with one call in flight
each, deadlines and restarts), :mod:`.hosts` (the actor bodies), :mod:`.build_pool` (the CPU build pool) and
:mod:`.measurer` (the GPU measurer). :func:`paretotune.runner.evaluator.evaluator_for` composes them; nothing
here imports ray until a backend is made (:func:`.session.import_ray`).
"""
