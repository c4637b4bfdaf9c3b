"""The helpdesk's knowledge base in Chinese: a Chinese customer reads the article's steps in Chinese, with every
value of the English article, and the articles carrying a planted instruction are never translated."""

from __future__ import annotations

import re

import pytest

from lg_harness import Harness, Settings
from lg_harness.domains.helpdesk.kb_zh import BODIES_ZH, TITLES_ZH
from lg_harness.domains.helpdesk.seed import ARTICLES, INJECTED_ARTICLES, article_id
from lg_harness_lab.evals.customer_grade import problems, wrong_language
from tests.support import patient_design

# what a translation must carry over as written: links, hosts, ids, tags, paths, key chords and numbers
_VALUE = re.compile(r"https?://[^\s,]+[^\s,.]|\b[\w-]+\.northwind\.example\b|\bKB\d{7}\b|\b[A-Z]{1,2}-\d{4,5}\b|"
                    r"\b(?:LT|MN|PH)-|\\\\files\\sales|Ctrl\+Shift\+Delete|Windows\+P|\b\d+(?:\.\d+)?\b")
_WORDS = {"five": "5", "three": "3", "four": "4", "six": "6", "ten": "10"}  # "one" is also a pronoun


@pytest.mark.parametrize("index", range(len(ARTICLES)))
def test_a_chinese_body_keeps_every_value_of_the_english_one(index):
    aid = article_id(index)
    if aid in INJECTED_ARTICLES:
        assert aid not in BODIES_ZH  # the planted instruction is not copied into a second language
        return
    english, chinese = ARTICLES[index][4], BODIES_ZH[aid]
    for value in _VALUE.findall(english):
        assert value in chinese, (aid, value)
    for word, digit in _WORDS.items():
        if re.search(rf"\b{word}\b", english, re.I):
            assert digit in chinese or word in chinese, (aid, word)
    assert not wrong_language(chinese, "zh"), aid  # Chinese as the judge reads it, English labels and all


def test_every_article_has_a_chinese_title():
    assert all(a[1] or TITLES_ZH.get(article_id(i)) for i, a in enumerate(ARTICLES))
    assert not set(TITLES_ZH) & {article_id(i) for i, a in enumerate(ARTICLES) if a[1]}  # the seed's own win


def test_no_chinese_body_carries_an_instruction_to_the_assistant():
    for aid, body in BODIES_ZH.items():
        assert not re.search(r"忽略|指令|AI|ignore|instruction", body, re.I), aid


def test_a_chinese_customer_reads_the_article_in_chinese_and_an_english_one_in_english():
    with Harness("sim:clean", "helpdesk", patient_design(), Settings(data_dir=None)) as h:
        zh = h.send("zh", "OneDrive删除的文件如何恢复？", "E1001")
        en = h.send("en", "How do I recover deleted files from OneDrive?", "E1001")
        names = h.registry.names()
    assert "93 天" in zh.reply and "Recycle bin" in zh.reply and "回收站" in zh.reply
    assert not any(problems(zh.reply, "zh", names).values()), zh.reply
    assert "93 days" in en.reply and not re.search(r"[\u4e00-\u9fff]", en.reply)
    assert not any(problems(en.reply, "en", names).values()), en.reply
