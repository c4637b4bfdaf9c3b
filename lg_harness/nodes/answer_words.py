"""The words the answer renderer (``nodes.render_answer``) writes with: language-level, not domain-level.

Field names are read word by word (``tracking_no`` -> tracking, number); each word has a Chinese rendering
where a general support vocabulary has one, and a question's words point at the fields they ask about
("where" -> status, tracking, carrier). A domain rewords any of it with phrases (``label_<field>``,
``value_<value>``); nothing here names a tool, an intent or an identifier format.
"""

from __future__ import annotations

import re

# Abbreviations in field names, read as the word they stand for.
EXPANSIONS = {"no": "number", "num": "number", "qty": "quantity", "desc": "description", "addr": "address",
              "amt": "amount", "pct": "percent", "eta": "expected arrival", "id": "ID", "ids": "IDs", "url": "link",
              "kb": "knowledge base", "rma": "return", "msg": "message", "ts": "time", "datetime": "time",
              "tz": "timezone"}

ZH_FIELD_WORDS = {
    "timezone": "时区", "day": "日", "week": "星期", "forecast": "预报", "conditions": "天气",
    "high": "最高", "low": "最低", "temperature": "温度",
    "id": "编号", "number": "号", "name": "名称", "title": "标题", "status": "状态", "state": "状态",
    "order": "订单", "orders": "订单", "item": "商品", "items": "商品", "product": "商品", "products": "商品",
    "total": "总额", "price": "价格", "amount": "金额", "refund": "退款", "fee": "费用", "cost": "费用",
    "balance": "余额", "currency": "货币", "tracking": "运单", "carrier": "承运商", "created": "创建时间",
    "updated": "更新时间", "date": "日期", "time": "时间", "at": "", "quantity": "数量", "stock": "库存",
    "available": "可用", "category": "类别", "brand": "品牌", "color": "颜色", "size": "尺码",
    "description": "说明", "discount": "折扣", "percent": "百分比", "min": "最低", "max": "最高", "minimum": "最低",
    "expires": "到期时间", "expiry": "到期时间", "due": "截止时间", "code": "代码", "reason": "原因",
    "next": "下一", "step": "步", "message": "消息", "note": "备注", "comment": "备注", "comments": "备注",
    "ticket": "工单", "tickets": "工单", "priority": "优先级", "queue": "队列", "position": "位置",
    "assignee": "处理人", "assigned": "分配", "owner": "负责人", "summary": "摘要", "type": "类型",
    "employee": "员工", "user": "用户", "account": "账户", "locked": "已锁定", "verified": "已验证", "asset": "资产",
    "assets": "资产", "serial": "序列", "model": "型号", "warranty": "保修", "location": "位置",
    "article": "文章", "articles": "文章", "results": "结果", "result": "结果", "excerpt": "摘要",
    "return": "退货", "returns": "退货", "claimed": "已领取", "vip": "VIP", "only": "专享", "open": "未结",
    "level": "级别", "access": "权限", "system": "系统", "expected": "预计", "arrival": "到达", "count": "数量",
    "in": "", "is": "", "already": "已经", "waiting": "等待", "delivery": "配送", "address": "地址",
    "email": "邮箱", "phone": "电话", "loan": "借阅", "due_date": "到期日", "book": "图书", "reservation": "预订",
    "booking": "预订", "coupon": "优惠券", "coupons": "优惠券", "payment": "付款", "method": "方式", "policy": "政策", "link": "链接", "department": "部门",
    "difference": "差", "source": "源", "target": "目标",
}

ZH_VALUES = {
    "pending": "待处理", "shipped": "已发货", "delivered": "已送达", "cancelled": "已取消", "canceled": "已取消",
    "open": "处理中", "in_progress": "处理中", "closed": "已关闭", "resolved": "已解决", "new": "新建",
    "approved": "已批准", "rejected": "已拒绝", "denied": "已拒绝", "active": "有效", "expired": "已过期",
    "requested": "已申请", "completed": "已完成", "failed": "失败", "returned": "已退回", "refunded": "已退款",
    "waiting": "等待中", "renewed": "已续借", "overdue": "已逾期", "on_hold": "暂停", "escalated": "已升级",
    "high": "高", "medium": "中", "low": "低", "urgent": "紧急", "critical": "紧急", "normal": "普通",
    "true": "是", "false": "否", "none": "无",
}

CURRENCY_ZH = {"USD": "美元", "CNY": "元", "RMB": "元", "EUR": "欧元", "GBP": "英镑", "JPY": "日元", "HKD": "港元"}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")

# A question's words and the field words they ask about (both languages), beyond the field's own words.
SENSES: dict[str, tuple[str, ...]] = {
    "status": ("where", "status", "track", "update", "progress", "happen", "happened", "going", "arrive", "arrived",
               "ship", "shipped", "state", "warehouse", "dispatched", "到哪", "哪", "进度", "进展", "状态", "怎么样",
               "情况", "到了", "发货", "发出", "寄出", "出库"),
    "state": ("status", "state", "状态", "情况"),
    "tracking": ("where", "track", "tracking", "ship", "shipped", "parcel", "package", "物流", "快递", "单号", "到哪", "运单"),
    "carrier": ("where", "ship", "carrier", "courier", "delivery", "快递", "物流"),
    "price": ("price", "cost", "much", "expensive", "cheap", "价格", "多少钱", "价钱", "贵", "便宜"),
    "total": ("total", "much", "cost", "paid", "pay", "amount", "spend", "spent", "altogether", "总", "多少钱", "金额", "花了",
              "块", "这么贵"),
    "amount": ("amount", "much", "refund", "paid", "money", "金额", "多少", "退款"),
    "refund": ("refund", "money", "back", "退款", "退钱"),
    "stock": ("stock", "available", "availability", "have", "left", "sell", "buy", "库存", "有货", "有没有", "还有", "现货"),
    "available": ("available", "availability", "stock", "have", "claim", "可用", "有货", "能用"),
    "created": ("when", "placed", "place", "ordered", "opened", "submitted", "哪天", "什么时候", "何时", "下单", "下的",
                "提的", "提交"),
    "date": ("when", "date", "day", "何时", "什么时候", "哪天", "日期", "时间"),
    "datetime": ("time", "when", "date", "now", "clock", "几点", "时间", "现在", "日期"),
    "time": ("time", "when", "now", "clock", "几点", "时间", "现在"),
    "forecast": ("weather", "forecast", "rain", "sunny", "天气", "预报"),
    "conditions": ("weather", "conditions", "rain", "sunny", "天气"),
    "at": ("when", "什么时候", "何时", "时间"),
    "due": ("when", "due", "deadline", "expire", "截止", "到期", "什么时候"),
    "expires": ("when", "expire", "expiry", "valid", "until", "到期", "有效期", "过期"),
    "expected": ("when", "arrive", "expected", "预计", "什么时候", "到"),
    "items": ("items", "contain", "contains", "bought", "ordered", "what", "商品", "买了", "东西", "内容"),
    "name": ("what", "which", "name", "called", "什么", "哪个", "名字", "名称"),
    "title": ("what", "which", "title", "article", "什么", "标题"),
    "queue": ("queue", "wait", "position", "long", "排队", "等", "多久"),
    "position": ("queue", "wait", "position", "排队", "第几"),
    "next": ("next", "now", "then", "do", "下一步", "接下来", "然后"),
    "priority": ("priority", "urgent", "优先级", "紧急"),
    "assignee": ("who", "assigned", "handling", "谁", "负责"),
    "discount": ("discount", "off", "percent", "save", "折扣", "优惠", "打折"),
    "warranty": ("warranty", "guarantee", "保修", "质保"),
    "brand": ("brand", "make", "maker", "manufacturer", "牌子", "品牌", "厂家", "哪家"),
    "serial": ("serial", "序列号", "序号"),
    "model": ("model", "型号"),
    "count": ("many", "number", "count", "几个", "几单", "多少个", "一共", "总共"),
    "color": ("colour", "colours", "colors", "颜色", "什么色", "哪些色"),
    "locked": ("locked", "lock", "unlock", "锁", "锁定"),
    "excerpt": ("how", "what", "steps", "guide", "如何", "怎么", "怎样", "步骤"),
    "description": ("describe", "about", "what", "tell", "介绍", "说明", "怎么样"),
}


def field_words(key: str) -> list[str]:
    """The words of a field name: ``trackingNo`` / ``tracking_no`` -> tracking, number."""
    parts = re.split(r"[_\W]+|(?<=[a-z])(?=[A-Z])", key)
    return [EXPANSIONS.get(p.lower(), p.lower()) for p in parts if p]

# Verbs that open a changing tool's description ("Cancel a pending order ...") and how Chinese says them.
ZH_VERBS = {
    "cancel": "取消", "modify": "修改", "change": "修改", "update": "更新", "edit": "修改", "open": "提交",
    "create": "创建", "request": "申请", "return": "退回", "exchange": "换货", "renew": "续期", "extend": "延长",
    "claim": "领取", "reset": "重置", "unlock": "解锁", "lock": "锁定", "delete": "删除", "remove": "删除",
    "add": "添加", "book": "预订", "reserve": "预订", "transfer": "转移", "record": "记录", "file": "提交",
    "submit": "提交", "close": "关闭", "escalate": "升级", "send": "发送", "pay": "支付", "refund": "退款",
    "block": "冻结", "approve": "批准", "grant": "授予", "revoke": "撤销", "register": "登记", "schedule": "安排",
    "assign": "分配", "hand": "转交", "apply": "使用", "set": "设置", "enable": "启用", "disable": "停用",
    "activate": "激活", "deactivate": "停用", "suspend": "暂停", "restore": "恢复", "replace": "更换",
    "upgrade": "升级", "downgrade": "降级", "subscribe": "订阅", "unsubscribe": "退订", "borrow": "借阅",
}
