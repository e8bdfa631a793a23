-- Sample database 'bookshop', file bookshop_v1.sql: same schema as every file in this folder, different rows.
-- Written for baton's sample set; materialized into bookshop/<file>.sqlite by baton-data.

CREATE TABLE author (
    author_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    country TEXT,
    birth_year INTEGER
);

CREATE TABLE book (
    book_id INTEGER PRIMARY KEY,
    title TEXT NOT NULL,
    author_id INTEGER NOT NULL REFERENCES author (author_id),
    genre TEXT,
    published_year INTEGER,
    price REAL,
    pages INTEGER
);

CREATE TABLE sale (
    sale_id INTEGER PRIMARY KEY,
    book_id INTEGER NOT NULL REFERENCES book (book_id),
    store TEXT,
    quantity INTEGER,
    sale_month TEXT
);

INSERT INTO author VALUES (1, 'Oskar Ferreira', 'Sweden', 1977);
INSERT INTO author VALUES (2, 'Ada Nwosu', 'Portugal', 1930);
INSERT INTO author VALUES (3, 'Pavel Lindqvist', 'Nigeria', 1938);
INSERT INTO author VALUES (4, 'Lena Castell', 'Nigeria', 1972);
INSERT INTO author VALUES (5, 'Rafael Quint', 'Estonia', 1957);
INSERT INTO author VALUES (6, 'Hugo Marchetti', 'Portugal', 1939);
INSERT INTO author VALUES (7, 'Sunniva Berg', 'Nigeria', 1964);
INSERT INTO author VALUES (8, 'Ines Halloran', 'Ireland', 1981);

INSERT INTO book VALUES (1, 'The Salt Garden', 1, 'mystery', 1985, 18.9, 228);
INSERT INTO book VALUES (2, 'The Last Meridian', 5, 'fantasy', 1975, 12.5, 429);
INSERT INTO book VALUES (3, 'Northern Garden', 4, 'history', 2000, 18.9, 592);
INSERT INTO book VALUES (4, 'Paper Garden', 1, 'mystery', 1961, 15.0, 206);
INSERT INTO book VALUES (5, 'The Salt Compass', 5, 'poetry', 2012, 18.9, 380);
INSERT INTO book VALUES (6, 'Northern Tower', 2, 'mystery', 1978, 22.0, 585);
INSERT INTO book VALUES (7, 'Northern Orchard', 4, 'science', 1987, 12.0, 436);
INSERT INTO book VALUES (8, 'Crimson Letters', 7, 'poetry', 1973, 12.0, 418);
INSERT INTO book VALUES (9, 'The Silent Garden', 6, 'mystery', 1968, 24.5, 580);
INSERT INTO book VALUES (10, 'The Salt Harbour', 7, 'poetry', 2012, 8.5, 636);
INSERT INTO book VALUES (11, 'The Silent Letters', 4, 'poetry', 2003, 24.5, 234);
INSERT INTO book VALUES (12, 'Crimson Lantern', 1, 'science', 1985, 12.5, 407);
INSERT INTO book VALUES (13, 'Distant Orchard', 6, 'fantasy', 1956, 9.99, 168);
INSERT INTO book VALUES (14, 'Hidden Letters', 8, 'poetry', 1999, 14.25, 217);

INSERT INTO sale VALUES (1, 7, 'Harbor Street', 8, '2023-04');
INSERT INTO sale VALUES (2, 1, 'Station Kiosk', 12, '2023-08');
INSERT INTO sale VALUES (3, 12, 'Old Town', 1, '2023-06');
INSERT INTO sale VALUES (4, 12, 'Old Town', 10, '2023-10');
INSERT INTO sale VALUES (5, 11, 'Station Kiosk', 5, '2023-05');
INSERT INTO sale VALUES (6, 10, 'Old Town', 11, '2023-06');
INSERT INTO sale VALUES (7, 6, 'Harbor Street', 1, '2023-01');
INSERT INTO sale VALUES (8, 2, 'Harbor Street', 7, '2023-09');
INSERT INTO sale VALUES (9, 7, 'Station Kiosk', 7, '2023-02');
INSERT INTO sale VALUES (10, 6, 'Station Kiosk', 2, '2023-03');
INSERT INTO sale VALUES (11, 10, 'Harbor Street', 11, '2023-08');
INSERT INTO sale VALUES (12, 9, 'Old Town', 4, '2023-10');
INSERT INTO sale VALUES (13, 12, 'Old Town', 6, '2023-09');
INSERT INTO sale VALUES (14, 10, 'Harbor Street', 6, '2023-06');
INSERT INTO sale VALUES (15, 8, 'Harbor Street', 1, '2023-03');
INSERT INTO sale VALUES (16, 13, 'Harbor Street', 2, '2023-01');
INSERT INTO sale VALUES (17, 8, 'Station Kiosk', 7, '2023-04');
INSERT INTO sale VALUES (18, 13, 'Harbor Street', 4, '2023-04');
INSERT INTO sale VALUES (19, 7, 'Harbor Street', 8, '2023-03');
INSERT INTO sale VALUES (20, 1, 'Station Kiosk', 5, '2023-12');
INSERT INTO sale VALUES (21, 14, 'Station Kiosk', 11, '2023-07');
INSERT INTO sale VALUES (22, 11, 'Harbor Street', 2, '2023-08');
