"""device: the handheld client (buttons, small screen, voice) of exod.

Run it with ``exo device``; see docs/device.md. Submodules are imported on use
(PIL, gpiozero and the speech engines load only when the device runs).
"""

__all__: list[str] = []
