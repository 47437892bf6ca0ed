"""``ibm:<device>``: an IBM Quantum device through qiskit-ibm-runtime (issue 13, item 4; docs/ibm.md).

Platform code, in the platform's process; the workflow's process never reaches IBM. For each circuit a
method sends, in this order:

1. the circuit is transpiled to the device's ISA (Qiskit's preset pass manager on the device's own
   ``Target``, seeded) and checked against the circuit before anything is sent (state vectors on random
   product inputs, as ``qsolve.providers.compiler`` checks a provider's program): a circuit that fails the
   check, or whose ISA holds a gate outside rz, sx, x and cz, is never sent;
2. IBM states no price, so the cost is unknown: the person is told, and the job goes on only with their
   confirmation for this run (``qsolve.providers.jobs.Confirmation``: ``--yes``, or yes when asked);
3. the device's status is read: a device that is not operational stops the job (``backend_unavailable``);
4. the job is recorded in the state database's ``provider_jobs`` table (provider ``ibm``, its context
   holding what sealing needs), ``submitting`` is set, the job is sent as a SamplerV2 job with dynamical
   decoupling and twirling set off explicitly, and IBM's job id is stored as soon as it is given, so that a
   later process can collect the job (:func:`collect`, or ``qsolve providers follow RECORD``) if this one
   ends;
5. the job is followed to its end (never cancelled because this process stopped waiting); its counts are
   read from its shots (the SamplerV2 result's bit arrays), sealed as a ``sampler-v2`` provider result
   (quantum-provider-protocol §8.1, §8.3) with the host's key, kept as a blob, and the record marked done.

What was sent is recorded exactly: ``execution.sent`` is built from the body the client posted (read back
from the client's own HTTP session as it went), and is checked to be §8.3's ``sampler-v2`` row before
anything is sealed. A job whose body is not that row is cancelled, and nothing is sealed.

The credential: ``QISKIT_IBM_TOKEN``, else the one kept under ``ibm`` in the keychain or an owner-only file
(``qsolve.providers.credentials.CredentialStore``; ``python -m qsolve.targets.ibm save-key`` puts it there).
It is handed to ``QiskitRuntimeService`` directly: ``save_account`` (a plain file) is never called, and the
credential is in no log, message, record or receipt. ``QISKIT_IBM_INSTANCE``, ``QISKIT_IBM_CHANNEL`` and
``QISKIT_IBM_URL`` (a base URL used as it is, with ``/api/v1`` beneath it) are honoured, and so are the
client's own ``IAM_URL``, ``GLOBAL_SEARCH_URL`` and ``GLOBAL_CATALOG_URL``, which it reads itself.

Provenance: the device is ``silicon`` only when the service is IBM Quantum's own (no ``QISKIT_IBM_URL``,
or an ``https://`` URL on ``cloud.ibm.com``) and the device's configuration does not say it is a
simulator. Any other service (a stand-in on this machine among them) is sealed as ``simulator``, naming
the URL: qsolve cannot tell what answers there, and never calls counts measured that it cannot vouch
came from IBM's processors.

One module per concept (every name below is importable from ``qsolve.targets.ibm`` itself):

- ``names``: ``PROVIDER`` (``ibm``), ``KIND`` (``sampler-v2``), ``BASIS`` (``rzsxxcz``);
- ``errors``: ``IbmUnavailable``, ``IbmJobStopped`` (each with its ``reason``), and the key's scrub;
- ``settings``: ``IbmSettings``, where the client goes, and which settings are refused;
- ``credentials``: ``ibm_key``, the key from ``QISKIT_IBM_TOKEN`` or the credential store;
- ``service``: ``connect``, the client's service with the key passed to it, and the device's backend;
  ``unavailable``, why the device takes no job now;
- ``device``: ``describe``, the device as this client describes it, provenance included;
- ``isa``: the ISA's gates and ``check_isa``, the check of an ISA circuit against its circuit;
- ``sampler``: ``IbmSampler``, our interface over SamplerV2 (decoupling and twirling off), and the bodies
  the client posted;
- ``sealing``: ``execution_of`` and ``is_the_row``, the ``sampler-v2`` receipt's execution from the body;
- ``target``: ``IbmBackend``, the target, and ``open_ibm``;
- ``later``: ``collect`` and ``cancel``, a recorded job from any process;
- ``__main__``: ``python -m qsolve.targets.ibm save-key | collect RECORD | cancel RECORD``, the command
  :mod:`qsolve.cli.ibm`.

qiskit-ibm-runtime is imported only where the client is used (opening a device, sending, following), never
by importing this package.
"""

from __future__ import annotations

from qsolve.targets.ibm.credentials import ibm_key
from qsolve.targets.ibm.device import describe
from qsolve.targets.ibm.errors import IbmJobStopped, IbmUnavailable
from qsolve.targets.ibm.isa import CHECK_TOLERANCE, ISA_GATES, OPTIMIZATION_LEVEL, check_isa
from qsolve.targets.ibm.later import cancel, collect
from qsolve.targets.ibm.names import BASIS, KIND, PROVIDER
from qsolve.targets.ibm.sampler import IbmSampler
from qsolve.targets.ibm.sealing import FIELDS, SETTINGS, execution_of, is_the_row
from qsolve.targets.ibm.service import connect, unavailable
from qsolve.targets.ibm.settings import CHANNELS, ENVIRONMENT, IBM_DEFAULT_URL, IbmSettings
from qsolve.targets.ibm.target import FIRST_POLL_S, POLL_S, UNKNOWN_COST, WAIT_S, IbmBackend, open_ibm

__all__ = [
    "BASIS",
    "CHANNELS",
    "CHECK_TOLERANCE",
    "ENVIRONMENT",
    "FIELDS",
    "FIRST_POLL_S",
    "IBM_DEFAULT_URL",
    "ISA_GATES",
    "KIND",
    "OPTIMIZATION_LEVEL",
    "POLL_S",
    "PROVIDER",
    "SETTINGS",
    "UNKNOWN_COST",
    "WAIT_S",
    "IbmBackend",
    "IbmJobStopped",
    "IbmSampler",
    "IbmSettings",
    "IbmUnavailable",
    "cancel",
    "check_isa",
    "collect",
    "connect",
    "unavailable",
    "describe",
    "execution_of",
    "ibm_key",
    "is_the_row",
    "open_ibm",
]
