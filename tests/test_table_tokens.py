"""Tables for ctxcore.stages.tokens: where the offline vocabulary is placed for tiktoken (cache directory, file name,
hash, keeping a good file and replacing a corrupt one, the error texts), and the approximate tokenizer's own
encode / pieces / offsets / counts, all hand-valued."""

import gzip
import hashlib
import os
import tempfile

import pytest
import tiktoken

import ctxcore.stages.tokens as tokens
from ctxcore import get_tokenizer

CL100K_URL = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
# tiktoken's cache file name is sha1(url); its content must hash to tiktoken's expected sha256
CL100K_FILE = "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

APPROX = tokens.Tokenizer(tokens.APPROXIMATE, False)


def sha256_of(path) -> str:
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """Run from a scratch working directory, so a relative path never lands in the repository."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("TIKTOKEN_CACHE_DIR", raising=False)
    monkeypatch.delenv("DATA_GYM_CACHE_DIR", raising=False)
    return tmp_path


@pytest.mark.parametrize("env, expected", [
    ({"TIKTOKEN_CACHE_DIR": "/t/tik", "DATA_GYM_CACHE_DIR": "/t/gym"}, "/t/tik"),  # tiktoken's own variable wins
    ({"TIKTOKEN_CACHE_DIR": "/t/tik"}, "/t/tik"),
    ({"DATA_GYM_CACHE_DIR": "/t/gym"}, "/t/gym"),
    ({"TIKTOKEN_CACHE_DIR": "", "DATA_GYM_CACHE_DIR": "/t/gym"}, None),  # set but empty: caching disabled
    ({"DATA_GYM_CACHE_DIR": ""}, None),
])
def test_cache_directory_follows_tiktokens_variables(elsewhere, monkeypatch, env, expected):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert tokens._tiktoken_cache_dir() == expected


def test_cache_directory_defaults_to_data_gym_cache_in_the_temp_dir(elsewhere, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(elsewhere / "tmp"))
    assert tokens._tiktoken_cache_dir() == str(elsewhere / "tmp" / "data-gym-cache")


def test_seeding_writes_the_vocabulary_under_tiktokens_file_name(elsewhere, monkeypatch):
    cache = elsewhere / "not" / "yet" / "there"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    tokens._seed_cache("cl100k_base")
    assert sorted(os.listdir(cache)) == [CL100K_FILE]  # no temporary file left behind
    assert sha256_of(cache / CL100K_FILE) == CL100K_SHA256
    assert os.listdir(elsewhere / "cwd") == []


def test_seeding_into_an_existing_empty_directory(elsewhere, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(elsewhere))
    tokens._seed_cache("cl100k_base")
    assert sha256_of(elsewhere / CL100K_FILE) == CL100K_SHA256


def test_a_good_cached_file_is_kept_as_it_is(elsewhere, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(elsewhere))
    tokens._seed_cache("cl100k_base")
    path = elsewhere / CL100K_FILE
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = os.stat(path)
    tokens._seed_cache("cl100k_base")
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, 1_000_000_000)
    assert sorted(os.listdir(elsewhere)) == [CL100K_FILE, "cwd"]


def test_a_corrupt_cached_file_is_replaced(elsewhere, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(elsewhere))
    path = elsewhere / CL100K_FILE
    path.write_bytes(b"not a vocabulary")
    tokens._seed_cache("cl100k_base")
    assert sha256_of(path) == CL100K_SHA256
    # and it is the file bpe-openai ships, byte for byte
    import bpe_openai
    shipped = os.path.join(os.path.dirname(bpe_openai.__file__), "data", "cl100k_base.tiktoken.gz")
    with gzip.open(shipped) as f:
        assert path.read_bytes() == f.read()


def test_an_empty_cache_variable_is_refused_with_its_reason(elsewhere, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", "")
    with pytest.raises(LookupError) as err:
        tokens._seed_cache("cl100k_base")
    assert str(err.value) == "tiktoken caching is disabled (TIKTOKEN_CACHE_DIR is empty)"


def test_a_shipped_file_with_the_wrong_hash_is_refused_and_nothing_written(elsewhere, monkeypatch):
    # as if bpe-openai shipped another file than tiktoken expects: expect o200k's hash of the cl100k file
    monkeypatch.setitem(tokens._VOCABULARIES, "cl100k_base", (CL100K_URL, O200K_SHA256))
    cache = elsewhere / "cache"
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    with pytest.raises(LookupError) as err:
        tokens._seed_cache("cl100k_base")
    assert str(err.value) == "the cl100k_base vocabulary shipped by bpe-openai does not have the expected hash"
    assert not cache.exists()


# the approximate tokenizer: one "token" per 4 characters, rounded up
@pytest.mark.parametrize("text, encoded, pieces, offsets", [
    ("", [], [], []),
    ("abc", [0], ["abc"], [0]),
    ("abcd", [0], ["abcd"], [0]),
    ("abcde", [0, 1], ["abcd", "e"], [0, 4]),
    ("abcdefghij", [0, 1, 2], ["abcd", "efgh", "ij"], [0, 4, 8]),
    ("Refunds take 5 days.", [0, 1, 2, 3, 4], ["Refu", "nds ", "take", " 5 d", "ays."], [0, 4, 8, 12, 16]),
])
def test_approximate_tokenizer_splits_every_four_characters(text, encoded, pieces, offsets):
    assert (APPROX.encode(text), APPROX.pieces(text), APPROX.offsets(text)) == (encoded, pieces, offsets)
    assert APPROX.count(text) == len(encoded)


def test_approximate_counts_in_bulk_and_piece_spans():
    assert APPROX.count_many(["", "a", "abcd", "abcde", "x" * 9, "abcd"]) == [0, 1, 1, 2, 3, 1]
    # "abcde"+"fg"+"hijkl": tokens start at 0, 4, 8; piece spans are bisect_left over those starts
    assert APPROX.piece_tokens(["abcde", "fg", "hijkl"]) == ([(0, 2), (2, 2), (2, 3)], 3)
    # the pieces meet at line ends before letters, which split cl100k's text but not a count of characters: the
    # whole "a\nb\nc" is two tokens (starts 0, 4), not one per piece
    assert APPROX.piece_tokens(["a\n", "b\n", "c"]) == ([(0, 1), (1, 1), (1, 2)], 2)


@pytest.mark.parametrize("pieces, runs", [
    (["a\n", "b"], [(0, 1), (1, 2)]),  # the first boundary is between the first two pieces
    (["b", "a\n"], [(0, 2)]),  # a last piece's line end starts no run before the first
    (["a\n", "b\n", "<c>\n", "[S1]\n", "/d"], [(0, 1), (1, 2), (2, 3), (3, 5)]),
    (["x\n", "1", "y"], [(0, 3)]),  # a digit after a line end is no boundary
    ([], []),
])
def test_runs_of_prompt_pieces_that_tokenise_apart(pieces, runs):
    assert tokens._runs(pieces) == runs


def test_an_unknown_encoding_gets_the_approximate_tokenizer():
    tok = get_tokenizer("no_such_encoding")
    assert (tok.name, tok.exact, tok.encode("abcdefghi"), tok.pieces("abcdefghi")) == (
        "approx_chars4", False, [0, 1, 2], ["abcd", "efgh", "i"])


@pytest.mark.parametrize("text, pieces", [
    ("Hello world!", ["Hello", " world", "!"]),
    ("é", ["é"]),
    # cl100k splits these characters' UTF-8 bytes over tokens: a partial piece shows as U+FFFD
    ("😀", ["\ufffd", "\ufffd"]),
    ("漢字", ["\ufffd", "\ufffd", "字"]),
])
def test_exact_pieces_are_the_token_texts(cl100k, text, pieces):
    assert cl100k.pieces(text) == pieces


@pytest.mark.parametrize("model, encoding", [
    ("gpt-4o", "o200k_base"), ("  GPT-4o-Mini ", "o200k_base"), ("openai/gpt-4o", "o200k_base"),
    ("gpt-4o.2024", "o200k_base"), ("gpt-4.1", "o200k_base"), ("gpt-4.1-nano", "o200k_base"),
    ("gpt-4.5-preview", "o200k_base"), ("gpt-5", "o200k_base"), ("chatgpt-4o-latest", "o200k_base"),
    ("o1", "o200k_base"), ("o1-preview", "o200k_base"), ("o1mini", "o200k_base"), ("o3mini", "o200k_base"),
    ("o4-mini", "o200k_base"), ("o4mini", "o200k_base"),
    ("gpt-4", "cl100k_base"), ("gpt-4-0613", "cl100k_base"), ("azure/openai/gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"), ("text-embedding-3-small", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
])
def test_model_names_map_to_their_encoding(model, encoding):
    assert tokens.encoding_for_model(model) == encoding


@pytest.mark.parametrize("model", ["gpt-40", "gpt-4x", "o5", "gpt", "", "claude-3", "text-embedding-ada-003",
                                   "Vendor/GPT-40"])
def test_unknown_models_raise_with_the_name_as_given(model):
    with pytest.raises(KeyError) as err:
        tokens.encoding_for_model(model)
    assert err.value.args == (model,)


def test_exact_counts_one_and_many(cl100k):
    assert cl100k is get_tokenizer("cl100k_base")
    assert (cl100k.name, cl100k.exact) == ("cl100k_base", True)
    # " word" is one cl100k token; "a b" is "a" + " b"
    assert cl100k.encode("word word word") == [1178, 3492, 3492]
    assert cl100k.count_many(["a b", "word word word", "a b", "", "word"]) == [2, 3, 2, 0, 1]
    assert cl100k.count_later(["word word", "a b"]).result() == [2, 2]
    assert cl100k.offsets("word word word") == [0, 4, 9]
    assert cl100k.piece_tokens(["word wo", "rd", " word"]) == ([(0, 2), (2, 2), (2, 3)], 3)


def test_cache_size_grows_by_the_new_texts_only():
    before = tokens.cache_size("approx_chars4")
    texts = [f"cache size probe {i} of the approximate counter" for i in range(7)]
    APPROX.count_many(texts + texts[:3])
    assert tokens.cache_size("approx_chars4") == before + 7


def test_slices_of_about_a_size():
    assert tokens._slices(["aaaa", "bb", "cccccc", "d"], 5) == [(0, 2), (2, 3), (3, 4)]
    assert tokens._slices(["aaaaa", "b"], 5) == [(0, 1), (1, 2)]
    assert tokens._slices(["a", "b", "c"], 100) == [(0, 3)]
    assert tokens._slices([], 5) == []


def test_a_build_attaches_each_candidates_count(cl100k):
    from ctxcore import Candidate, Config, build
    cands = [Candidate("a", "word word word", 0.9), Candidate("b", "word", 0.8), Candidate("c", "", 0.7)]
    t = build(cands, "q", Config(near_dup=None))
    assert [c.tokens for c in t.candidates] == [3, 1, 0]
    approx = build(cands, "q", Config(encoding="no_such_encoding", near_dup=None))
    assert [c.tokens for c in approx.candidates] == [4, 1, 0]  # 14, 4 and 0 characters, over 4, rounded up


def test_piece_spans_of_a_text_with_a_lone_surrogate(cl100k):
    # tiktoken encodes the repaired text "a\ufffdb" as 3 tokens; the spans come from character offsets then
    assert cl100k.piece_tokens(["a\ud800", "b"]) == ([(0, 2), (2, 3)], 3)


@pytest.mark.parametrize("array", [False, True])
def test_counting_joined_texts_with_special_token_text_in_them(array):
    # a text that spells a special token is counted on its own, as ordinary text: "a <|endoftext|> b" is 8 tokens,
    # "<|fim_prefix|>x" 8, so the joined count of the others is not split at them
    encoding = tiktoken.get_encoding("cl100k_base")
    texts = ["a <|endoftext|> b", "plain text", "<|fim_prefix|>x", "", "more plain text"]
    assert tokens.count_joined(encoding, texts, array) == [8, 2, 8, 0, 3] == [
        len(encoding.encode_ordinary(t)) for t in texts]


def test_without_its_vocabulary_an_encoding_falls_back_to_the_labelled_approximate_counter(monkeypatch):
    # as on a machine where tiktoken's vocabulary file cannot be read: the tokenizer says it is approximate
    def no_vocabulary(encoding):
        raise OSError("no vocabulary here")
    monkeypatch.setattr(tokens, "_seed_cache", no_vocabulary)
    monkeypatch.delitem(tokens._TOKENIZERS, "cl100k_base", raising=False)
    tok = tokens.get_tokenizer("cl100k_base")
    assert (tok.name, tok.exact, tok._encoding) == ("approx_chars4", False, None)
