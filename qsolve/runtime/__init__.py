"""The platform's own processes: what keeps them bounded, leaves nothing behind and stops them cleanly.

worker      the platform's own work on a workflow's input (decoding, simulating, scoring, schemas) in a
            forked worker, within a memory bound and by a deadline
cgroups     a memory and a pids cgroup per workflow process (cgroup v1 or v2), the job's worker charged to it
admission   a machine-wide budget of the memory concurrent jobs claim: a job that does not fit waits
janitor     nothing left behind by a command that is killed: its helpers and folders removed
stopping    a platform stop (SIGTERM, SIGINT, a Prefect cancellation) told apart from a workflow's failure
heartbeat   progress, what keeps a lease renewed
failpoint   crash points for the tests that kill a process at a chosen moment

Nothing here imports the rest of the core, Prefect or storage.
"""
