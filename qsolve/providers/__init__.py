"""Bring your own device: the ``wai.quantum.provider/1`` protocol (quantum-provider-protocol §0 to §9).

device        what the compiler needs of a described device, and the basis it compiles to (§4, §5.1)
"""
