# SPDX-License-Identifier: Apache-2.0
"""Reference consumer of datacrumbs records: flatten, follow, generate, train, plot, traces."""
__version__ = "0.1.0"
