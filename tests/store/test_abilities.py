"""The generated note of what this Exo can do (``exo/abilities``; exo_core/store/abilities.py).

Written by ``exo init`` from the tools exod offers, the store's domains and the board; refreshed by
exod at start from the tools it really offers (a plugin's included); an edited note is kept; retrieval
brings it only by its load rule.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from exo_testkit import write_script

from exo_core.bootstrap import default_tool_specs, init_home
from exo_core.models.boards import BOARDS
from exo_core.retrieval.pipeline import Retriever
from exo_core.seams.home import ExoHome
from exo_core.store import Store
from exo_core.store.abilities import ABILITIES_ID, PIN_ONLY, Board, is_generated, list_abilities, refresh_abilities
from exo_core.store.lint import lint_store
from exo_core.store.load_rules import WIKILINK
from exo_core.tools import ToolSpec
from exo_core.tools.spec import abilities, object_schema


def _home(tmp_path: Path, board: str | None = "standard") -> tuple[ExoHome, Store]:
    home = ExoHome(tmp_path / "home")
    init_home(home, board=BOARDS[board] if board else None, explicit_board=board is not None)
    return home, Store.open(home.store_path())


def test_init_writes_the_note_from_the_offered_tools_the_store_and_the_board(tmp_path: Path) -> None:
    home, store = _home(tmp_path)
    note = store.read_node(ABILITIES_ID)
    specs = default_tool_specs()
    assert {s.name for s in specs} >= {"read_file", "bash", "recall", "ask_person"}
    text = f"{note.summary}\n{note.body}"
    for spec in specs:  # every offered tool's ability, each named (verbs of one object share it)
        verb, _, thing = spec.ability_text().partition(" ")
        assert verb in note.summary and thing in note.summary, spec.name
    # what the store keeps: the root router's domain lines; the board and its model
    assert "who the person is" in note.body and "people and organisations" in note.body
    assert "standard board profile" in note.body and BOARDS["standard"].model in note.body
    # the model reads no [[link]] to copy (the base Gemma answered everything with `[[self/INDEX]]`)
    assert not WIKILINK.search(text)
    assert PIN_ONLY in note.tags and is_generated(note)
    # the root router names the new domain; the store lints clean, warnings included
    assert "- [[exo/INDEX]]: what this Exo can do here" in (store.root / "INDEX.md").read_text()
    report = lint_store(store.root)
    assert report.findings == (), report.findings
    # a second init changes nothing
    before = store.node_path(ABILITIES_ID).read_bytes()
    assert f"{ABILITIES_ID} is up to date" in init_home(home)
    assert store.node_path(ABILITIES_ID).read_bytes() == before


def test_a_generated_note_follows_the_tools_and_an_edited_one_is_kept(tmp_path: Path) -> None:
    _, store = _home(tmp_path, board=None)
    path = store.node_path(ABILITIES_ID)
    assert "board profile" not in path.read_text()  # no board in config.toml: none named
    plugin = ToolSpec("book_table", "Book a table at a restaurant. Needs a time.", object_schema(()), toolset="food")
    more = [*abilities(default_tool_specs()), plugin.ability_text()]
    assert refresh_abilities(store, more, board=Board("laptop", "m")).startswith("refreshed")
    note = store.read_node(ABILITIES_ID)
    assert note.summary.endswith("and book a table at a restaurant.") and is_generated(note)
    # the person edits it: kept, whatever the tools become
    path.write_text(path.read_text().replace("Exo can", "My Exo can"))
    assert "edited by the person" in refresh_abilities(store, ["run commands"], board=None)
    assert "My Exo can" in path.read_text()
    # one that no longer parses is kept too, with the reason
    path.write_text("---\nid: exo/abilities\n---\n")
    assert "does not parse" in refresh_abilities(store, ["run commands"], board=None)
    # deleted: written fresh, with its load rule
    index = store.root / "exo" / "INDEX.md"
    index.write_text(index.read_text().split("## Load rules")[0] + "## Load rules\n")
    path.unlink()
    refresh_abilities(store, ["run commands"], board=None)
    assert store.read_node(ABILITIES_ID).summary == "Exo can run commands."
    assert [rule.targets for rule in store.router("exo").rules] == [(ABILITIES_ID,)]
    # a load rule the person removed from a note Exo keeps refreshing stays removed
    index.write_text(index.read_text().split("## Load rules")[0] + "## Load rules\n")
    assert refresh_abilities(store, ["read files"], board=None).startswith("refreshed")
    assert store.router("exo").rules == ()


def test_abilities_of_one_object_share_it_and_tools_without_one_are_named_by_their_description() -> None:
    assert list_abilities(["read files", "write files", "run commands", "read files"]) == (
        "read and write files and run commands"
    )
    assert list_abilities([]) == ""
    bare = ToolSpec("ping", "Check that a host answers. Uses ICMP.", object_schema(()))
    assert bare.ability_text() == "check that a host answers"


def test_retrieval_brings_the_note_only_by_its_load_rule(tmp_path: Path) -> None:
    home, store = _home(tmp_path)
    retriever = Retriever.open(store, home=home, embeddings=False)
    try:
        for asked in ("Hello! What can you help me with?", "Who are you?", "What can you do for me?"):
            recalled = retriever.retrieve(asked, record=False)
            assert recalled.pinned == (ABILITIES_ID,), asked
            assert recalled.render().startswith(f"[{ABILITIES_ID}] What Exo can do here: Exo can ")
        # words the note holds, but no rule: BM25 alone would rank it first; it is not recalled
        for asked in ("Read the file notes.txt.", "Can you edit and delete files and run commands?"):
            assert retriever.lexical.search(asked, 5)[0][0] == ABILITIES_ID
            assert retriever.retrieve(asked, record=False).packed.blocks == (), asked
    finally:
        retriever.close()


PLUGIN = """
def register(ctx):
    ctx.register_tool("book_table", {"type": "object"}, lambda: "booked", description="Book a table.",
                      risk="low", ability="book tables")
"""


def test_exod_refreshes_the_note_with_the_tools_it_offers(exod_factory, tmp_path: Path) -> None:
    home, store = _home(tmp_path)
    assert "book tables" not in store.read_node(ABILITIES_ID).summary
    folder = home.root / "plugins" / "tables"
    folder.mkdir(parents=True)
    (folder / "plugin.yaml").write_text("name: tables\nversion: 1\n")
    (folder / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    workspace = tmp_path / "ws"
    workspace.mkdir()
    exod = exod_factory(home.root, write_script(tmp_path / "s.json", [{"text": "ok"}]), workspace)
    note = store.read_node(ABILITIES_ID)  # written before exod accepts connections
    assert note.summary.endswith("and book tables.") and is_generated(note)
    assert exod.stop() == 0
