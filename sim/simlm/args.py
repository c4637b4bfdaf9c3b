"""Reading an OpenAI-style request for the domain-general simulated model: words, values, tool arguments.

Everything here works from what a chat-completions request carries (message roles and text, tool calls,
tool results, JSON schemas) plus the general language knowledge any model has: English stop-words and
suffixes, a small English<->Chinese glossary, what an identifier or an amount looks like. No domain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage, SystemMessage, ToolMessage

from simlm.faults import CLEAN, Dice, FaultProfile

INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\u00ad]")
CJK = re.compile(r"[\u3400-\u9fff]")
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
# Letters and digits together (inner dashes allowed): how ids, codes and references look in any domain.
IDENT = re.compile(r"(?<![A-Za-z0-9_-])(?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Za-z])"
                   r"[A-Za-z0-9]+(?:[-_][A-Za-z0-9]+)*(?![A-Za-z0-9_-])")
_ORDINAL = re.compile(r"^\d+(?:st|nd|rd|th)$", re.I)
MONEY = re.compile(r"[$€£¥￥]\s?\d[\d,]*(?:\.\d+)?|\d[\d,]*(?:\.\d+)?\s?(?:USD|EUR|GBP|CNY|RMB|元)|\b\d+\.\d{2}\b")
_NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?![\w-]|\.\d)")
EXAMPLE = re.compile(r"(?:e\.g\.|eg\.|for example|such as|like|例如|比如)\s*[:：,]?\s*"
                     r"(?:[\"“]([^\"”]{1,40})[\"”]|([^\s,;)\"'”。，、]*[^\s,;)\"'”。，、.]))", re.I)
FIRST = re.compile(r"\b(?:first|1st|earliest|top)\b|第一|头一个|最早", re.I)
_EARLY_KEY = re.compile(r"(?:^|[\W_])(?:first|earliest|initial|original|start)(?:$|[\W_])", re.I)
LAST = re.compile(r"\b(?:last|bottom)\b(?! (?:week|month|year|time|night))|最后", re.I)
CORRECTION = re.compile(r"\b(?:i mean|sorry|actually|instead|not\s+\S+\s*,)|不是|说错|应该是|改成", re.I)


def wordset(text: str) -> frozenset[str]:
    return frozenset(text.split())


STOP = wordset("""
a an the and or but if then so to of in on at by for with from into about as is are was were be been being am
do does did doing done have has had having i me my mine we us our you your yours he she it its they them their
this that these those there here what which who whom whose when why can could would should will shall may
might must please pls plz hi hello hey thanks thank just also too very really want wanted need needs like get
got give tell let know make sure some any all no not yes ok okay one thing things help hello im ive id dont
s t d ll m re ve now still again up out off over only own same than other more most much many such each
hmm hm um uh ah oh okay alright great cool nice good perfect awesome sounds
""")

# General vocabulary: Chinese words a model knows, as English words (support verbs and common nouns).
GLOSSARY: dict[str, tuple[str, ...]] = {
    "取消": ("cancel",), "重置": ("reset",), "密码": ("password",), "订单": ("order",), "工单": ("ticket",),
    "状态": ("status",), "退货": ("return",), "退款": ("refund",), "权限": ("access", "permission"),
    "笔记本": ("laptop", "notebook"), "电脑": ("computer", "laptop"), "账号": ("account",), "账户": ("account",),
    "搜索": ("search",), "搜": ("search",), "找": ("find", "search"), "列出": ("list",), "列表": ("list",),
    "哪": ("where",), "人工": ("human",), "真人": ("human", "person"), "客服": ("agent", "support"),
    "转接": ("transfer",), "查询": ("query", "check", "look"), "查看": ("view", "check"), "查": ("check", "look"),
    "承运商": ("carrier",), "物流": ("shipping", "tracking"), "快递": ("delivery", "shipping"), "发货": ("ship",), "优惠券": ("coupon",),
    "折扣": ("discount",), "领取": ("claim",), "投诉": ("complaint", "complain"), "商品": ("product",),
    "产品": ("product",), "价格": ("price",), "多少钱": ("price", "cost"), "库存": ("stock",), "颜色": ("color",),
    "尺码": ("size",), "申请": ("request", "apply"), "提交": ("submit",), "创建": ("create",), "新建": ("create",),
    "打开": ("open",), "开通": ("open", "enable"), "关闭": ("close",), "删除": ("delete", "remove"),
    "修改": ("change", "update"), "更改": ("change",), "更新": ("update",), "续借": ("renew",), "续订": ("renew",),
    "借": ("borrow", "loan"), "书": ("book",), "预订": ("book", "reserve"), "预约": ("book", "schedule"),
    "支付": ("pay", "payment"), "付款": ("pay", "payment"), "发票": ("invoice",), "地址": ("address",),
    "邮箱": ("email",), "邮件": ("email", "mail"), "电话": ("phone",), "手机": ("phone", "mobile"),
    "用户": ("user",), "会员": ("member",), "登录": ("login", "sign"), "解锁": ("unlock",), "锁定": ("lock",),
    "授予": ("grant",), "批准": ("approve",), "撤销": ("revoke",), "报修": ("report", "repair"),
    "报告": ("report",), "问题": ("issue", "problem"), "故障": ("issue", "incident", "fault"),
    "网络": ("network",), "打印机": ("printer",), "软件": ("software",), "安装": ("install",),
    "设备": ("device",), "账单": ("bill", "invoice"), "余额": ("balance",), "编号": ("number", "id"),
    "号码": ("number",), "详情": ("detail",), "信息": ("information",), "原因": ("reason",), "描述": ("description",),
    "日期": ("date",), "时间": ("time",), "延长": ("extend",), "升级": ("escalate", "upgrade"),
    "紧急": ("urgent",), "会议": ("meeting",), "文件": ("file", "document"), "报销": ("expense", "reimburse"),
    "跟踪": ("track",), "追踪": ("track",), "到哪": ("where", "status"), "退": ("return", "refund"),
    "换货": ("exchange",), "到期": ("due", "expire"), "书籍": ("book",), "如何": ("how",), "怎么": ("how",),
    "怎样": ("how",), "设置": ("set", "setup", "configure"), "恢复": ("recover", "restore"), "连接": ("connect",),
    "认证": ("authentication",), "验证": ("verify",), "身份": ("identity",), "员工": ("employee",),
    "经理": ("manager",), "系统": ("system",), "指南": ("guide",), "文章": ("article",), "知识库": ("knowledge",),
    "技术员": ("technician",), "保修": ("warranty",), "显示器": ("monitor",), "评论": ("comment",),
    "备注": ("comment", "note"),
    "领": ("claim",), "待发货": ("pending",), "已发货": ("shipped",), "签收": ("delivered",), "其他": ("list",),
    "哪些": ("list",), "所有": ("all", "list"), "全部": ("all", "list"), "推荐": ("recommend", "search"),
    "有没有": ("available",), "有卖": ("sell",), "买": ("buy",), "卖": ("sell",), "看看": ("show",),
    "坏": ("broken",), "无法使用": ("broken",), "不能用": ("broken",), "开个": ("open", "create"),
    "补充": ("add", "comment"), "积分": ("point",), "名称": ("name",), "合计": ("total",), "金额": ("amount",),
}
# The English side back to Chinese, for wording answers and questions (first glossary entry wins).
ZH_WORD: dict[str, str] = {}
_PHRASE_ONLY = {"有没有", "有卖", "看看", "开个", "到哪", "多少钱", "不能用", "无法使用", "怎么", "如何", "怎样", "哪", "其他",
                "哪些", "来着", "领", "坏", "退", "买", "卖", "找", "搜", "查"}  # request phrasings, not names of things
for _zh, _ens in GLOSSARY.items():
    for _en in _ens if _zh not in _PHRASE_ONLY else ():
        ZH_WORD.setdefault(_en, _zh)
ZH_WORD.update({"id": "编号", "number": "编号", "title": "标题", "total": "合计", "name": "名称", "your": "您的",
                "code": "代码", "due": "到期", "created": "创建时间", "item": "项目", "quantity": "数量",
                "no": "号", "at": "", "qty": "数量", "items": "项目", "available": "可用", "updated": "更新时间",
                "results": "结果", "query": "查询"})
# Common status words in Chinese, for stating a value in a Chinese answer (the English word follows).
ZH_VALUE = {"pending": "待处理", "shipped": "已发货", "delivered": "已送达", "cancelled": "已取消", "canceled": "已取消",
            "open": "处理中", "in_progress": "处理中", "closed": "已关闭", "resolved": "已解决", "new": "新建",
            "approved": "已批准", "rejected": "已拒绝", "active": "有效", "expired": "已过期", "requested": "已申请",
            "completed": "已完成", "failed": "失败", "returned": "已退回", "refunded": "已退款"}
# English words that mean the same for a request (a model's general vocabulary), both sides of a match.
_SAME = {"guide": "how", "manual": "how", "tutorial": "how", "instructions": "how", "steps": "how",
         "troubleshoot": "fix", "repair": "fix", "setup": "set", "configure": "set", "install": "set",
         "equipment": "device", "hardware": "device", "pc": "computer", "restore": "recover", "purchase": "buy",
         "mobile": "phone", "mail": "email", "remove": "delete", "progress": "status", "track": "status",
         "submit": "create", "raise": "create", "display": "list", "recommend": "search",
         "suggest": "search", "sell": "product", "buy": "product", "availability": "available",
         "complaint": "complain", "unacceptable": "unhappy", "terrible": "unhappy", "awful": "unhappy",
         "angry": "unhappy", "frustrated": "unhappy", "ridiculous": "unhappy", "worst": "unhappy"}
_PHRASES = [(re.compile(r"\b(?:any|an|the|some)\s+updates?\b", re.I), " status "),
            (re.compile(r"\bwhere\s+(?:are|is)\s+(?:we|things|it)\s+(?:with|on)\b", re.I), " status "),
            (re.compile(r"\bset\s+up\b", re.I), " set "), (re.compile(r"进度|进展"), " status "),
            (re.compile(r"\b(?:what|do|does)\s+(?:do\s+)?you\s+(?:have|sell|offer|carry)\b", re.I), " available "),
            (re.compile(r"\blooking\s+for\b", re.I), " search "),
            (re.compile(r"\bshow\s+(?:me\s+)?(?:all|my|a list)\b", re.I), " list my "),
            (re.compile(r"\bhow\s+much\b", re.I), " price cost ")]
# A negated request ("don't transfer me to a human", "不是要退货") asks for nothing: up to the clause's end.
_ZH_NEGATION = re.compile(r"(?:不是要|不是想|不想|不要|别|不用|不需要|无需)[\u3400-\u9fff]{1,4}")
_EN_NEGATION = re.compile(r"\b(?:don'?t|do not|never|no need to)\s+[^,.;!?]{0,40}", re.I)


def example_of(description: str) -> str | None:
    """The first example a description gives ("e.g. AB-1234", 'e.g. "blue shoes"')."""
    m = EXAMPLE.search(description or "")
    return (m.group(1) or m.group(2)) if m else None


def clean(text: str) -> str:
    return INVISIBLE.sub("", text)


def text_of(message: BaseMessage) -> str:
    """A message's text; of content parts (``[{"type": "text", "text": ...}]``), the text ones."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = [p if isinstance(p, str) else p.get("text", "") for p in content if isinstance(p, str | dict)]
    return "\n".join(p for p in parts if p) or json.dumps(content, ensure_ascii=False)


def stem(word: str) -> str:
    """Crude suffix stripping, applied alike to the user's and the tools' words so forms meet."""
    w = word.lower()
    if len(w) <= 3:
        return w
    for suffix, repl, min_len in (("ies", "y", 5), ("sses", "ss", 5), ("ation", "", 8), ("ment", "", 7),
                                  ("ing", "", 6), ("ed", "", 5), ("es", "", 5), ("s", "", 4)):
        if w.endswith(suffix) and len(w) >= min_len and not w.endswith(("ss", "us", "is")):
            w = w[: len(w) - len(suffix)] + repl
            break
    if len(w) > 3 and w[-1] == "e":
        w = w[:-1]
    if len(w) > 3 and w[-1] == w[-2] and w[-1] not in "aeious":
        w = w[:-1]
    return w


SAME = {stem(k): stem(v) for k, v in _SAME.items()}


def identifiers(text: str) -> list[str]:
    return [m for m in IDENT.findall(clean(text)) if not _ORDINAL.match(m)]


def words(text: str, *, negations: bool = False) -> list[str]:
    """Content-word stems of a text, English and (through the glossary) Chinese; ids are not words."""
    text = IDENT.sub(" ", clean(text))
    if negations:  # "don't cancel" / "不要取消": the user does not ask for that
        text = _ZH_NEGATION.sub(" ", _EN_NEGATION.sub(" ", text))
    for phrase, meaning in _PHRASES:  # "any update on X" asks for its status, it does not update it
        text = phrase.sub(meaning, text)
    text = re.sub(r"([a-z])([A-Z])", r"\1 \2", text)
    out = [stem(w) for w in re.findall(r"[A-Za-z]+", text) if w.lower() not in STOP and len(w) > 1]
    for zh, ens in GLOSSARY.items():
        if zh in text:
            out.extend(stem(e) for e in ens)
    return out + [SAME[w] for w in out if w in SAME]


# "How do I add a printer?": the verbs of a how-to question are its topic, not a request to act.
_HOW_CLAUSE = re.compile(r"\bhow\s+(?:do|can|could|should|would)\s+(?:i|we|you)\s+([^?.!,;]+)|\bhow\s+to\s+([^?.!,;]+)|"
                         r"\b(?:that|which)?\s*(?:i|we)\s+(?:can|could|may|am able to)\s+(\w+)|"  # "the coupons I can claim"
                         r"(?:如何|怎么|怎样)([\u3400-\u9fff]{1,8})|(?:可以|能够|能)([\u3400-\u9fff]{1,3})", re.I)


def without_negations(text: str) -> str:
    return _ZH_NEGATION.sub(" ", _EN_NEGATION.sub(" ", text))


def topic_words(text: str) -> set[str]:
    """Stems inside how-to clauses: what the user wants to learn about, not what they ask the tool to do."""
    return {w for m in _HOW_CLAUSE.finditer(clean(text)) for w in words(next(g for g in m.groups() if g))}


def has_content(text: str) -> bool:
    """Whether a message says anything beyond greetings, thanks and fillers."""
    rest = re.sub(r"你好|您好|谢谢|多谢|感谢|好的|不用了|可以|是的|在吗|请问|[吗呢吧啊哦嗯了的]", "", clean(text))
    return bool(words(text) or identifiers(text) or len("".join(_CJK_RUN.findall(rest))) >= 2)


def bigrams(text: str) -> set[str]:
    return {run[i:i + 2] for run in _CJK_RUN.findall(text) for i in range(max(1, len(run) - 1))}


def json_spans(text: str) -> list[tuple[int, int, Any]]:
    """Every JSON object or array embedded in ``text`` (balanced ``{...}``/``[...]``) with its span."""
    spans, i = [], 0
    while i < len(text):
        if text[i] in "{[" and (end := _balanced_end(text, i)) and (value := _loads(text[i:end])) is not None:
            spans.append((i, end, value))
            i = end
            continue
        i += 1
    return spans


def _loads(chunk: str) -> Any:
    try:
        return json.loads(chunk)
    except ValueError:
        return None


def _balanced_end(text: str, start: int) -> int | None:
    depth, in_str, escaped = 0, False, False
    for j in range(start, len(text)):
        ch = text[j]
        if in_str:  # brackets inside strings do not count
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
            if depth == 0:
                return j + 1
    return None


def result_data(content: str) -> Any:
    """A tool result as data: the JSON it contains (the largest piece), else its plain text."""
    found = [value for _, _, value in json_spans(content)]
    return max(found, key=lambda v: len(json.dumps(v))) if found else content.strip()


@dataclass
class Call:
    """Everything one model call sees, plus its dice."""

    messages: Sequence[BaseMessage]
    tools: list[dict[str, Any]]
    profile: FaultProfile = CLEAN
    dice: Dice | None = None
    tokens: list[int] = field(default_factory=list)
    memo: dict[Any, Any] = field(default_factory=dict)  # decisions taken once per call (e.g. obey or not)
    admits: Any = None  # text -> whether a constrained decoder lets the reply be that text (None: anything)
    # how the results reach this answer step: "replay" (tool messages), "facts" (stated in the user turn that asks
    # for the reply) or "both"; the profile may hold the answer step's rates per presentation (answer_steps)
    presentation: str = "replay"

    def answer_rate(self, fault: str) -> float:
        """An answer-step fault's rate for this call's presentation and decoding (``FaultProfile.answer_rate``)."""
        return self.profile.answer_rate(fault, self.presentation, "free" if self.admits is None else "constrained")

    def may_say(self, text: str) -> bool:
        return self.admits is None or self.admits(text)

    def roll(self, p: float) -> bool:
        return self.dice is not None and p > 0 and self.dice.roll(min(p, 1.0))

    @property
    def humans(self) -> list[str]:
        return [text_of(m) for m in self.messages if isinstance(m, HumanMessage)]

    def forgets(self, index: int) -> bool:
        """Whether the fact in message ``index`` is lost: likelier the more input follows it."""
        if not self.tokens or index >= len(self.tokens):
            return False
        return self.roll(self.profile.forget_chance(sum(self.tokens[index + 1:])))

    def sources(self, name: str = "") -> list[tuple[int, str, bool]]:
        """(index, text, is_user) to look for values in: user messages newest first, then tool results, then
        facts the instructions state about ``name`` ("order ids: A, B"), never their examples or rules."""
        indexed = list(enumerate(self.messages))
        users = [(i, text_of(m), True) for i, m in reversed(indexed) if isinstance(m, HumanMessage)]
        results = [(i, text_of(m), False) for i, m in reversed(indexed) if isinstance(m, ToolMessage)]
        stated = [(i, text, False) for i, m in indexed if isinstance(m, SystemMessage)
                  for text in stated_facts(text_of(m), name)] if name else []
        return users + results + stated


_FACT_LINE = re.compile(r"^\s*(?:[-*•]\s*)?([A-Za-z][\w .-]{0,40}?)\s*[:=：]\s*(.+?)\s*$", re.M)


def stated_facts(text: str, name: str) -> list[str]:
    """Values of ``key: value`` lines whose key shares a word with ``name``: facts, not instructions."""
    own = set(words(name.replace("_", " ")))
    return [m.group(0).strip() for m in _FACT_LINE.finditer(text)
            if own & set(words(m.group(1).replace("_", " "))) and not EXAMPLE.search(m.group(2))]


def nullable(prop: dict[str, Any]) -> bool:
    """Whether a property's schema takes null (an optional argument in a strict schema)."""
    kind = prop.get("type")
    return (kind == "null" or (isinstance(kind, list) and "null" in kind)
            or any(b.get("type") == "null" for key in ("anyOf", "oneOf") for b in prop.get(key, [])))


def prop_schema(prop: dict[str, Any]) -> dict[str, Any]:
    """A property's own schema: the first non-null branch of ``anyOf``/``oneOf``, keeping outer keys."""
    for key in ("anyOf", "oneOf"):
        branches = [b for b in prop.get(key, []) if b.get("type") != "null"]
        if branches:
            return {**{k: v for k, v in prop.items() if k != key}, **branches[0]}
    return prop


def bare_pattern(pattern: str) -> re.Pattern[str] | None:
    """The pattern without its anchors, bounded so it matches whole tokens inside running text."""
    core = re.sub(r"^\^|\$$", "", re.sub(r"^\\A|\\Z$", "", pattern))
    try:
        return re.compile(rf"(?<![A-Za-z0-9_-])(?:{core})(?![A-Za-z0-9_-])")
    except re.error:
        return None


def conform(value: str, pattern: str) -> str | None:
    """``value`` made to fit ``pattern`` by the format fixes a model makes (case, separators), or None."""
    try:
        full = re.compile(pattern)
    except re.error:
        return None
    v = clean(value).strip()
    dashed = re.sub(r"(?<=[A-Za-z])(?=\d)", "-", v)
    squeezed = re.sub(r"[-_\s]", "", v)
    for cand in (v, v.upper(), v.lower(), dashed, dashed.upper(), squeezed, squeezed.upper(),
                 re.sub(r"(?<=[A-Za-z])(?=\d)", "-", squeezed).upper()):
        if full.search(cand) and (bare := bare_pattern(pattern)) and bare.fullmatch(cand):
            return cand
    return None


def pattern_values(pattern: str, text: str) -> list[str]:
    """Values in ``text`` that fit ``pattern``: exact matches, else id-like tokens that conform to it."""
    bare = bare_pattern(pattern)
    if bare is None:
        return []
    text = clean(text)
    exact = [m.group(0) for m in bare.finditer(text)]
    if exact:
        return list(dict.fromkeys(exact))
    loose = [conform(t, pattern) for t in re.findall(r"[A-Za-z0-9]+(?:[-_ ][0-9]+)?", text) if re.search(r"\d", t)]
    return list(dict.fromkeys(v for v in loose if v))


def keyed_values(data: Any, key: str) -> list[Any]:
    """Scalar values stored under ``key`` anywhere in parsed JSON, in document order."""
    out: list[Any] = []
    if isinstance(data, dict):
        for k, v in data.items():
            if k == key and isinstance(v, str | int | float) and not isinstance(v, bool):
                out.append(v)
            else:
                out.extend(keyed_values(v, key))
    elif isinstance(data, list):
        for v in data:
            out.extend(keyed_values(v, key))
    return out


def raw_with_invisible(texts: list[str], value: str) -> str | None:
    """``value`` as the user typed it, zero-width characters included, if they typed any inside it."""
    gap = INVISIBLE.pattern + "*"
    for text in texts:
        if INVISIBLE.search(text) and (m := re.search(gap.join(re.escape(ch) for ch in value), text)):
            return m.group(0) if m.group(0) != value else None
    return None


def numbers(text: str) -> list[float]:
    return [float(n) for n in _NUMBER.findall(IDENT.sub(" ", clean(text)))]


# ------------------------------------------------------------------------------------------ arguments

_QUERY_HINT = re.compile(r"query|search|keyword|term|^q$|搜索|关键词", re.I)
_TEXT_HINT = re.compile(r"reason|description|message|detail|text|summary|comment|note|content|body|issue|"
                        r"problem|explanation|title|subject|原因|描述|说明", re.I)
_SHORT_TEXT = re.compile(r"title|subject|summary", re.I)
_ID_HINT = re.compile(r"(?:^|_)(?:id|ids|code|number|no|ref|reference)$|编号|号码", re.I)
_CAUSE = re.compile(r"\b(?:because|since|due to|as it|as they|reason)\b|因为|由于|原因", re.I)
_AFFIRM = re.compile(r"\b(?:yes|yeah|confirm|sure|please do|go ahead)\b|是的|确认|好的|可以", re.I)
_ZH_FILLER = re.compile(r"我想买|我想要|我要|想买|想要|有没有|有什么|帮我|请问|请|找一下|搜一下|搜索|查找|查一下|一下|推荐|"
                        r"你们|我们|没有|一款|一个|看看|有卖|卖|吗|呢|的|吧|啊|买|找|有")
# Request words that say "look something up" rather than what to look for.
_ASKING = frozenset(stem(w) for w in wordset("find look looking search show buy have see check available sell any how "
                                              "recommend suggest stock"))


def fill_args(tool: dict[str, Any], call: Call, request: str,
              context: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Arguments for ``tool`` from the conversation; returns (args, required names it could not fill).

    ``request`` is what the user says now (values are taken from it first); ``context`` adds the earlier
    request it answers, for free text such as a search query."""
    params = tool["function"].get("parameters") or {}
    props = params.get("properties") or {}
    # A strict schema lists every property as required; one that takes null may be left out (null).
    required = [r for r in params.get("required") or [] if not nullable(props.get(r) or {})]
    args: dict[str, Any] = {}
    for name, raw in (params.get("properties") or {}).items():
        value = value_for(name, prop_schema(raw), call, request, tool, name in required, context or request)
        if value is not None:
            args[name] = value
    return args, [r for r in required if r not in args]


_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def value_for(name: str, prop: dict[str, Any], call: Call, request: str, tool: dict[str, Any],
              required: bool, context: str = "") -> Any:
    kind = prop.get("type")
    if kind in (None, "string") and (prop.get("format") == "email" or "email" in name.lower()):
        # an address the user wrote, whatever the schema's pattern says of it (most say nothing)
        found = _EMAIL.findall(plain(request)) or _EMAIL.findall(plain(context))
        if found:
            return found[-1]
    if kind == "array":
        return _array_value(name, prop, call, request)
    if prop.get("pattern"):
        return patterned(name, prop["pattern"], call, request)
    if prop.get("enum"):  # the option the user named now, else in the request this answers
        return _enum_value(prop, request, False) or _enum_value(prop, context or request, required)
    if kind in ("integer", "number"):
        return _number_value(name, prop, request, required)
    if kind == "boolean":
        return _bool_value(name, prop, request, required)
    if kind in (None, "string"):
        return _string_value(name, prop, call, request, tool, required, context or request)
    return None


def patterned(name: str, pattern: str, call: Call, request: str) -> str | None:
    """The value for a patterned property: named in the request, else the newest mention in the user's
    messages, then in tool results (under a key of the same name first). "The first one" means the first
    row of a list shown since the user last named a value, else the earliest value the user gave."""
    first = bool(FIRST.search(request))
    hits = pattern_values(pattern, plain(request)) or pattern_values(pattern, request)
    if hits:
        return _as_typed(call, hits[0] if first else hits[-1])
    if not first and (named := _row_named(call, name, pattern, request)):
        return named
    found = [(i, h, u, t) for i, t, u in call.sources(name) if (h := _source_hits(t, u, pattern, name))]
    if first:
        found = _first_order(call, found)
    for index, hits, is_user, _ in found:
        if call.forgets(index):
            continue  # lost: too far back in the input
        if is_user:
            return _as_typed(call, hits[0] if first else hits[-1])
        return hits[-1] if LAST.search(request) else hits[0]  # a list result: its first row by default
    return None


_EMBEDDED = re.compile(r"<(\w+)[^>]*>.*?</\1>", re.S)
_NAME_KEY = re.compile(r"(?:^|_)(?:name|title|model|subject|short_description)$")


def plain(text: str) -> str:
    """A user message without the JSON or tagged blocks pasted into it: values there are data, not what
    the user asks about."""
    for start, end, _ in reversed(json_spans(text)):
        text = text[:start] + " " + text[end:]
    return _EMBEDDED.sub(" ", text)


def _row_named(call: Call, name: str, pattern: str, request: str) -> str | None:
    """The id of a listed row whose name the user uses ("that monitor"), from the newest result."""
    asked = set(words(request, negations=True))
    bare = bare_pattern(pattern)
    for _, text, is_user in call.sources(name):
        for _, _, data in [] if is_user else json_spans(text):
            for row in _rows(data):
                value, label = row.get(name), " ".join(str(v) for k, v in row.items() if _NAME_KEY.search(k))
                if isinstance(value, str) and bare and bare.fullmatch(value) and asked & set(words(label)):
                    return value
    return None


def _rows(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict):
        return [data, *(r for v in data.values() for r in _rows(v))]
    return [r for v in data for r in _rows(v)] if isinstance(data, list) else []


def _first_order(call: Call, found: list[tuple[int, list[str], bool, str]]) -> list[tuple[int, list[str], bool, str]]:
    """Where "the first one" is: a fact stated as the first, a list shown since the user last named a
    value, the earliest value the user gave, then the rest."""
    stated = [x for x in found if isinstance(call.messages[x[0]], SystemMessage)]
    early = [x for x in stated if _EARLY_KEY.search(x[3].split(":")[0])]
    newest_user = max((x[0] for x in found if x[2]), default=-1)
    lists = [x for x in found if not x[2] and len(x[1]) > 1 and (x[0] > newest_user or x in stated)]
    users = [x for x in reversed(found) if x[2]]
    return early + lists[:1] + users + [x for x in found if not x[2]]


def _source_hits(text: str, is_user: bool, pattern: str, name: str) -> list[str]:
    bare = bare_pattern(pattern)
    keyed = [] if is_user or bare is None else [
        str(v) for _, _, data in json_spans(text) for v in keyed_values(data, name) if bare.fullmatch(str(v))]
    return keyed or pattern_values(pattern, text)


def _as_typed(call: Call, value: str) -> str:
    """The value, or with ``copy_invisible`` the same characters as typed, zero-width ones included."""
    raw = raw_with_invisible(call.humans, value)
    return raw if raw and call.roll(call.profile.copy_invisible) else value


def _enum_value(prop: dict[str, Any], request: str, required: bool) -> Any:
    said = set(words(request, negations=True))
    for option in prop["enum"]:
        if option is not None and (set(words(str(option))) & said):
            return option
    return prop.get("default") if required else None


def _number_value(name: str, prop: dict[str, Any], request: str, required: bool) -> int | float | None:
    hint = set(words(f"{name} {prop.get('description', '')}"))
    found = numbers(request) if required else _numbers_near(request, hint)
    low, high = prop.get("minimum", float("-inf")), prop.get("maximum", float("inf"))
    found = [n for n in found if low <= n <= high]
    if not found:
        return None
    value = found[-1]
    return int(value) if prop.get("type") == "integer" and value.is_integer() else value


def _numbers_near(text: str, hint: set[str]) -> list[float]:
    """Numbers the user ties to this parameter: within three words of one of its words ("show 3 orders")."""
    tokens = re.findall(r"\d+(?:\.\d+)?|[A-Za-z]+|[\u3400-\u9fff]", IDENT.sub(" ", clean(text)))
    out = []
    for i, tok in enumerate(tokens):
        if tok[0].isdigit() and any(set(words(t)) & hint for t in tokens[max(0, i - 2): i + 4]):
            out.append(float(tok))
    return out


def _bool_value(name: str, prop: dict[str, Any], request: str, required: bool) -> bool | None:
    own = set(words(name.replace("_", " ")))
    if own & set(words(request)):
        return bool(own & set(words(request, negations=True)))
    return True if required and _AFFIRM.search(request) else None


def _string_value(name: str, prop: dict[str, Any], call: Call, request: str, tool: dict[str, Any],
                  required: bool, context: str) -> str | None:
    about = f"{name} {prop.get('description', '')}"
    if _QUERY_HINT.search(name) or (not _TEXT_HINT.search(name) and _QUERY_HINT.search(about)):
        return _fit(prop, query_text(context, tool["function"]["name"]))
    if _TEXT_HINT.search(name):
        if not required and not _CAUSE.search(request):
            return None  # an optional note the user gave no material for
        text = clean(request if len(words(request)) >= 2 else context).strip()
        return _fit(prop, " ".join(text.split()[:12]) if _SHORT_TEXT.search(name) else text)
    if (shape := _shape(prop.get("description", ""))) is not None:  # "in 24-hour format (HH:MM)"
        said = shape.findall(plain(request)) or shape.findall(plain(context))
        return said[-1] if said else None
    if not _ID_HINT.search(name) and (named := named_value(name, request, prop.get("description", ""))) is not None:
        return _fit(prop, named)
    if _ID_HINT.search(name) or required:
        return _identifier_value(name, prop, call, request)
    return None


_PATH_HINT = re.compile(r"path|dir|folder|file|repo", re.I)
_PATH = re.compile(r"(?<![\w])(?:~|\.{1,2})?/[\w.@~+-]+(?:/[\w.@~+-]+)*/?")
# Capitalised words in a row ("New York"), not the first word of a sentence, not "I"; a name of parts joined
# by slashes ("Asia/Tokyo", "America/New_York") is one name.
_PROPER = re.compile(r"(?<![.!?]\s)(?<!^)\b([A-Z][A-Za-z_]+(?:/[A-Z][A-Za-z_]+)+|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*)")
_SLASHED = re.compile(r"e\.g\.[^)]*\b[A-Z][A-Za-z_]+/[A-Z]")
# A format the description spells out, and the values that have it.
_SHAPES = ((re.compile(r"\bHH:MM\b"), re.compile(r"(?<![\d:])\d{1,2}:\d{2}(?![\d:])")),
           (re.compile(r"\bYYYY-MM-DD\b"), re.compile(r"\b\d{4}-\d{2}-\d{2}\b")))


def _shape(description: str) -> re.Pattern[str] | None:
    return next((value for spelled, value in _SHAPES if spelled.search(description)), None)


def named_value(name: str, request: str, description: str = "") -> str | None:
    """A free-text value the request names, as a model reads it: a path for a path-like argument, else the
    last proper name (a city, a person, a product line) the user wrote; one of slash-joined parts first where
    the description's example is one ("e.g., 'America/New_York'")."""
    text = plain(request)
    if _PATH_HINT.search(name):
        paths = _PATH.findall(text)
        return paths[-1].rstrip("?.,!") if paths else None
    names = [n for n in _PROPER.findall(text) if n not in ("I", "Please", "Hi", "Hello", "Thanks")]
    slashed = [n for n in names if "/" in n] if _SLASHED.search(description) else []
    return (slashed or names)[-1] if names else None


def _identifier_value(name: str, prop: dict[str, Any], call: Call, request: str) -> str | None:
    """An id-like token for an unpatterned id, shaped like the description's example if it gives one:
    from the request, the user's other messages, tool results (under this key first), stated facts."""
    example = example_of(prop.get("description", "")) or ""
    letters = re.match(r"[A-Za-z]*", example)  # always a match: the pattern matches the empty string
    prefix = letters.group(0).lower() if letters else ""
    found = [i for i in identifiers(request) if i.lower().startswith(prefix)]
    for _, text, is_user in ([] if found else call.sources(name)):
        keyed = [] if is_user else [str(v) for _, _, data in json_spans(text) for v in keyed_values(data, name)]
        found = keyed[:1] or [i for i in identifiers(text) if i.lower().startswith(prefix)]
        if found and (is_user or keyed or not json_spans(text)):
            break
        found = []
    return found[-1] if found else None


def _array_value(name: str, prop: dict[str, Any], call: Call, request: str) -> list[Any] | None:
    items = prop_schema(prop.get("items") or {})
    if items.get("pattern"):
        found = pattern_values(items["pattern"], request)
        for _, text, _ in ([] if found else call.sources()):
            if found := pattern_values(items["pattern"], text):
                break
        return found or None
    if items.get("enum"):
        said = set(words(request, negations=True))
        chosen = [o for o in items["enum"] if o is not None and set(words(str(o))) & said]
        return chosen or None
    return None


def _fit(prop: dict[str, Any], text: str) -> str | None:
    text = text[: prop.get("maxLength", 300)].strip()
    return text if len(text) >= max(1, prop.get("minLength", 1)) else None


def query_text(request: str, tool_name: str) -> str:
    """What to search for: the request without stop-words, asking words and the tool's own name words."""
    own = set(words(tool_name.replace("_", " ")))
    kept = []
    text = _ZH_NEGATION.sub(" ", _EN_NEGATION.sub(" ", clean(request)))  # "I don't need X. How do I Y?"
    for tok in re.findall(r"[A-Za-z0-9][\w'-]*|[\u3400-\u9fff]+", text):
        if CJK.match(tok):
            tok = _ZH_FILLER.sub("", tok)
            kept += [tok] if tok else []
        elif tok.lower() not in STOP and stem(tok) not in own and stem(tok) not in _ASKING:
            kept.append(tok)
    return " ".join(kept).strip(" ?？!.。")  # empty: the user has not said what to look for yet
