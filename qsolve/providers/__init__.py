"""Bring your own device: the ``wai.quantum.provider/1`` protocol (quantum-provider-protocol §0 to §9).

device             what a compiler needs of a described device; §4's bases in order
program            the wai.native/1 program: turns, gates, reading it as a provider must, its qasm3
compiler           a Qiskit circuit compiled to a described device and checked against it
messages           the six operations' requests and answers; billing, estimates and results as read
cost               a provider's own price for a run's jobs, asked of its estimate and shown beside credits
errors             ProviderError: every failure names the provider and the operation, credentials out
transport          what a transport is; over_http (one URL, POST, Bearer) and over_process (JSON lines)
confined           a process provider's program confined (its own PID namespace and root, nobody, Landlock,
                   seccomp, a cgroup): what it may read and write, starting it, probing the kernel
program_env        what a process provider's program is given of the environment: an allowlist, never the
                   host's secrets by name or by value
program_log        its standard error kept: the last characters, and a bounded file rotated once, never
                   written through a link
client             ProviderClient: the six operations over a transport
reference          the reference provider around qiskit-aer's exact simulator (reference_options: its flags)
credentials        the keychain where one answers, else an owner-only file
registry           QSOLVE_HOME/providers.yaml;  connect: a client opened from it
jobs               one circuit as a provider job: compile, estimate, confirm, record, submit, follow, seal
sealing            the request and result a host seals for a provider's job (§8.1)
conformance        the conformance checker and its vectors (qsolve providers test)

The commands (``qsolve providers ...``, ``qsolve worker``) are :mod:`qsolve.cli.providers` and
:mod:`qsolve.cli.worker`; which work queue a hardware run goes to, and cancelling a recorded job on any
device, are :mod:`qsolve.targets.routing` and :mod:`qsolve.targets.cancel`.
"""
