"""gpulab run by slurmd on a compute node: as its HealthCheckProgram, its Prolog and its Epilog (docs/SLURM.md).

What the run found, as one finding and the drain reason Slurm shows (:mod:`.reason`); the node's state read and
changed through ``scontrol``, behind a protocol (:mod:`.scontrol`); the assessment run in a process group of its
own that is killed at a deadline (:mod:`.deadline`); what each mode does with the finding, and its exit code
(:mod:`.hook`); one run of a mode, from the assessment to the exit code (:mod:`.run`).
"""
