"""The two requests every pipeline logs, as plain data: what the retriever returns, how many
passages the pipeline sends, and what the fake model answers.

CORRECT: three distinct passages retrieved, all three sent, the answer cites the warranty passage.
BROKEN (copies): four copies of the refund paragraph outrank the warranty passage; the pipeline's
top-4 step sends the copies only, so the passage that answers half the question never reaches the
model. BROKEN (stale): two versions of the returns policy; the pipeline's top-1 step sends the
2024 version and drops the 2025 one that replaced it."""

from __future__ import annotations

from dataclasses import dataclass

SYSTEM = ("You are the support assistant. Answer only from the context below and cite the passages you "
          "use, like [1]. If the context does not answer the question, say you don't know.")
MODEL = "gpt-4o-mini"

REFUND = ("Refunds are issued to the original payment method within five business days after the returned "
          "item reaches our warehouse.")
REFUND_2 = ("Refunds are issued to the original payment method within five business days after the returned "
            "item reaches our warehouse and passes an inspection.")
WARRANTY = ("Damaged goods: if an item arrives damaged, the customer sends a photo of the damage within 14 days; "
            "we ship a replacement at no cost and the damaged item does not need to be returned.")
GIFT = "Gift wrapping is available at checkout for 3.50 EUR per item and includes a printed card."
OLD = "Return window: unused items can be returned within 30 days of delivery for a full refund."
NEW = ("Return window: from 1 March 2025, unused items can be returned within 14 days of delivery for a full "
       "refund; after that only store credit is offered.")


@dataclass(frozen=True)
class Doc:
    id: str
    text: str
    score: float
    meta: tuple = ()  # extra metadata as (key, value) pairs: doc_id, date ...

    def metadata(self) -> dict:
        """The metadata a framework's document carries: id, score and source, as LangChain users keep them."""
        return {"id": self.id, "score": self.score, "source": f"kb/{self.id}.md", **dict(self.meta)}


@dataclass(frozen=True)
class Run:
    name: str
    query: str
    retrieved: tuple[Doc, ...]
    top_k: int          # the pipeline's post-retrieval step keeps this many (by score)
    answer: str

    def sent(self) -> tuple[Doc, ...]:
        return tuple(sorted(self.retrieved, key=lambda d: -d.score)[:self.top_k])


Q_DAMAGED = "How long does a refund take, and what happens if my blender arrived damaged?"
Q_RETURN = "How many days does a customer have to return an unused item?"

CORRECT = Run("correct", Q_DAMAGED,
              (Doc("refund-policy", REFUND, 0.93, (("doc_id", "refunds"),)),
               Doc("warranty-damaged-goods", WARRANTY, 0.71, (("doc_id", "warranty"),)),
               Doc("gift-wrap", GIFT, 0.42, (("doc_id", "gift"),))),
              4, "Refunds are issued within five business days after the returned item reaches our warehouse [1]. "
                 "If an item arrives damaged, send a photo of the damage within 14 days and we ship a replacement "
                 "at no cost [2].")

COPIES = Run("copies", Q_DAMAGED,
             (Doc("refund-copy-0", REFUND, 0.93, (("doc_id", "faq-0"),)),
              Doc("refund-copy-1", REFUND, 0.92, (("doc_id", "faq-1"),)),
              Doc("refund-copy-2", REFUND_2, 0.91, (("doc_id", "faq-2"),)),
              Doc("refund-copy-3", REFUND, 0.90, (("doc_id", "faq-3"),)),
              Doc("warranty-damaged-goods", WARRANTY, 0.71, (("doc_id", "warranty"),)),
              Doc("gift-wrap", GIFT, 0.42, (("doc_id", "gift"),))),
             4, "Refunds take five business days after the item reaches the warehouse [1][2].")

STALE = Run("stale", Q_RETURN,
            (Doc("returns-2024", OLD, 0.90, (("doc_id", "returns-policy"), ("date", "2024-02-01"))),
             Doc("returns-2025", NEW, 0.82, (("doc_id", "returns-policy"), ("date", "2025-03-01"))),
             Doc("gift-wrap", GIFT, 0.40, (("doc_id", "gift"),))),
            1, "Customers have 30 days from delivery to return an unused item [1].")


def context(docs) -> str:
    """The evidence block every pipeline's prompt template fills: ``[n] text`` per passage."""
    return "\n\n".join(f"[{i}] {d.text}" for i, d in enumerate(docs, 1))


def user_message(query: str, docs) -> str:
    return f"Context:\n{context(docs)}\n\nQuestion: {query}"
