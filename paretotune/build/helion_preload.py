"""Named in the fork server's preload list for a Helion campaign: importing this module (in the server, after torch
and Triton) imports Helion through paretotune's door, where that leaves CUDA to the server's children
(:func:`~paretotune.campaign.trial_import.preload_helion_where_fork_safe`: a CPU build of torch, or torch's NVML
check on and NVML answering). Decided here, in the server: the campaign process starts the server before it
imports torch itself (:func:`paretotune.build.fork_server.start_early`), so it cannot tell yet which torch it has.
Never raises: an exception here would end the fork server (it forgives only an ImportError), and a worker imports
Helion itself where the server did not."""
from __future__ import annotations

from paretotune.campaign.trial_import import preload_helion_where_fork_safe

preload_helion_where_fork_safe()  # absent, broken or refused: the kernel's own import reports it
