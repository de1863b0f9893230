// traintext.js writes the text the oracle tokenizers are trained on: the
// first SST-2 training sentences plus a fixed multilingual sample, so the
// vocabularies hold pieces of several scripts. Deterministic.
'use strict';
const fs = require('fs');

const multilingual = [
  'Le café est très bon, mais la crème brûlée était déçevante à Noël.',
  'Der Bär läuft über die Straße und frühstückt Käse in München.',
  'El niño comió una piña en la montaña; ¿qué más pasó mañana?',
  'Ação, coração e informação são palavras portuguesas comuns.',
  'Это был очень хороший фильм, и актёры играли замечательно.',
  'Москва — столица России, а Киев — столица Украины.',
  '我们今天去北京看电影，这部电影非常好看。',
  '東京の天気はとても良いです。映画を見に行きましょう。',
  'これはテストの文章です。ひらがなとカタカナを含みます。',
  '한국어 문장도 포함되어 있습니다. 영화가 정말 재미있었어요.',
  'هذا الفيلم كان رائعا جدا والممثلون كانوا ممتازين.',
  'اللغة العربية جميلة ومكتوبة من اليمين إلى اليسار.',
  'यह फिल्म बहुत अच्छी थी और कहानी भी रोचक थी।',
  'Ελληνικά γράμματα: αλφα, βήτα, γάμμα και δέλτα.',
  'עברית נכתבת מימין לשמאל והיא שפה עתיקה.',
  'Türkçe çok güzel bir dil; İstanbul büyük bir şehir.',
  'Việt Nam có nhiều món ăn ngon như phở và bánh mì.',
  'ภาษาไทยไม่มีช่องว่างระหว่างคำในประโยค',
  'I loved it 😀😀 so much 👍🏽 and the ending ❤️ was great 🎉',
  'Prices: $12.50, €9,99, £7 and ¥1000 — 50% off!!!',
  'Emails like someone@example.com and URLs https://example.org/path?q=1',
  "It's, they're, we've, I'm, you'll, he'd — contractions everywhere.",
  'ＦＵＬＬＷＩＤＴＨ ｌｅｔｔｅｒｓ and ﬁ ligatures ① ② ③ ½ ™',
];

function main() {
  const [sst2, out, nStr] = process.argv.slice(2);
  const n = Number(nStr || 2000);
  const lines = [];
  if (sst2 && fs.existsSync(sst2)) {
    const rows = fs.readFileSync(sst2, 'utf8').split('\n').slice(1, n + 1);
    for (const r of rows) lines.push(r.split('\t')[0]);
  }
  for (let k = 0; k < 20; k++) lines.push(...multilingual);
  fs.writeFileSync(out, lines.join('\n') + '\n');
}

main();
