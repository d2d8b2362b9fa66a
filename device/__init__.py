"""device: the handheld client (buttons, small screen, voice) of exod."""
