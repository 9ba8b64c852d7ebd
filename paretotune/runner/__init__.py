"""Running a campaign: the loop (:mod:`.loop`), what a run starts from (:mod:`.start`), resuming a stopped run
(:mod:`.resume`) and the session the ``run`` and ``resume`` commands share (:mod:`.session`)."""
