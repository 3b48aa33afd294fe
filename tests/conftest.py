"""Settings for every test: Hypothesis without its timing checks.

Hypothesis fails an example that runs past ``deadline`` (200 ms by default) and a test whose
data generation is "too slow"; both measure wall time, so on a busy machine (2 cores, several
suites at once) they fail tests that are correct.  The properties are about results, not
speed: this profile turns both off for every @given test (a test's own @settings still
applies on top).
"""

from hypothesis import HealthCheck, settings

settings.register_profile("kbroker", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("kbroker")

