"""The learning loop (docs/learning.md): signals to evidence-backed lessons, kept only if they prove themselves.

* :mod:`.signals` — which ledger entries teach, and the strength table;
* :mod:`.features` — checkable taste features (rules-only classifier, exact graders);
* :mod:`.weights` — the taste weight, a pure function of resolved evidence;
* :mod:`.lessons` — the lesson book, folded from the ledger;
* :mod:`.reviewer` — classify, reflect, argue against; its only write is a proposal;
* :mod:`.promotion` — the promotion rules 1 to 6;
* :mod:`.pack` — the learned pack section, taste nodes, and the rebuildable views;
* :mod:`.learner` — one review pass, end to end;
* :mod:`.service` — the reviewer in exod, and the ``[learning]`` settings;
* ``exo_edge.proposal_queue`` — the durable proposal queue for a larger model, and its drainer;
* :mod:`.evalset`, :mod:`.climb` — the exam and the greedy conservative climb;
* :mod:`.metrics` — longitudinal metrics from the ledger.
"""

from exo_core.learning.learner import Learner, ReviewReport
from exo_core.learning.lessons import Lesson, LessonBook
from exo_core.learning.pack import TastePackView, TasteView, register_views, render_learned
from exo_core.learning.signals import STRENGTHS, signed_strength
from exo_core.learning.weights import Evidence, label, weight

__all__ = [
    "Learner",
    "ReviewReport",
    "Lesson",
    "LessonBook",
    "TasteView",
    "TastePackView",
    "register_views",
    "render_learned",
    "STRENGTHS",
    "signed_strength",
    "Evidence",
    "label",
    "weight",
]
