"""What ``ibm:`` is called where it is recorded and sealed, and the basis its receipts name."""

from __future__ import annotations

PROVIDER = "ibm"  # the receipts' provider name, the provider_jobs rows' provider, the credential's name
KIND = "sampler-v2"
BASIS = "rzsxxcz"
