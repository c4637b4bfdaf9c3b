"""The helpdesk's fact words: what a reply may say about a ticket's or request's status."""

from __future__ import annotations

from lg_harness.core.claims import Claim, equals

STATUS = {
    "new": ("新建",),
    "in_progress": ("in progress", "being worked on", "处理中"),
    "resolved": ("resolved", "已解决"),
    "closed": ("closed", "已关闭"),
    "approved": ("approved", "已批准"),
    "rejected": ("rejected", "已拒绝"),
    "pending": ("pending approval", "awaiting approval", "审批中"),
    "in_repair": ("in repair", "being repaired", "维修中"),
}

CLAIMS = tuple(Claim(words, ("status",), equals(status), says=status.replace("_", " "))
               for status, words in STATUS.items())
